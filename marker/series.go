package marker

import "github.com/monagent/monagent/timebase"

// Series is a marker's series: its name and tags, which with the agent's
// host make its InfluxDB series. It is comparable (a map key).
type Series struct {
	Name string
	Tags [MaxTags]Tag
}

// Series returns the marker's series.
func (m *Marker) Series() Series { return Series{Name: m.Name, Tags: m.Tags} }

// SeriesTable holds a V for each series seen, at most max of them: every
// distinct name and tag set a sender invents is a series, so the table
// bounds what a runaway sender costs, and counts the markers of the series
// it refuses. Not safe for concurrent use.
type SeriesTable[V any] struct {
	max     int
	m       map[Series]*V
	dropped uint64
}

// NewSeriesTable returns a table of at most max series.
func NewSeriesTable[V any](max int) *SeriesTable[V] {
	return &SeriesTable[V]{max: max, m: map[Series]*V{}}
}

// Get returns the V of m's series, a new zero one for a series not seen
// while the table holds fewer than max; beyond that it returns nil and
// counts the marker dropped.
func (t *SeriesTable[V]) Get(m *Marker) *V {
	k := m.Series()
	v := t.m[k]
	if v == nil {
		if len(t.m) >= t.max {
			t.dropped++
			return nil
		}
		v = new(V)
		t.m[k] = v
	}
	return v
}

// Len is how many series the table holds.
func (t *SeriesTable[V]) Len() int { return len(t.m) }

// Dropped is how many markers Get refused (their series beyond max).
func (t *SeriesTable[V]) Dropped() uint64 { return t.dropped }

// When is the marker's moment as its sender gave it: the sender's stamp in
// its clock (REALTIME or MONOTONIC), else its arrival (REALTIME).
func (m *Marker) When(arrival int64) timebase.Timestamp {
	switch m.Clock {
	case ClockRealtime:
		return timebase.Timestamp{NS: m.StampNS, Domain: timebase.DomainRealtime}
	case ClockMonotonic:
		return timebase.Timestamp{NS: m.StampNS, Domain: timebase.DomainMonotonic}
	}
	return timebase.Timestamp{NS: arrival, Domain: timebase.DomainRealtime}
}
