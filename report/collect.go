package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// ErrNoData is returned when the input holds no record of the selected
// measurement and field.
var ErrNoData = errors.New("no matching records")

// Tag is one tag key and value.
type Tag struct{ Key, Value string }

// domainTags name a record's clock domain: a series must not mix them.
var domainTags = []string{"clock", "ref"}

// Query selects the records and groups them into series.
type Query struct {
	Measurement, Field string
	Where              []Tag    // every tag must match
	GroupBy            []string // nil: the whole tag set
	// Start and Stop bound the record times (ns, inclusive); 0 is unbounded.
	Start, Stop int64
	// TimeValue makes every record of the measurement a sample whose value
	// is its own time (event matching on record times); Field may then be
	// empty (with a Field, only records carrying it are used).
	TimeValue bool
	// Scale, when above 1, multiplies each value before it is rounded to an
	// integer (a rate of 22.5 B/s is kept as 22500 with Scale 1000).
	Scale int64

	// floats keeps each value unrounded too (Series.f), for fields such as
	// an hca_model's slope that rounding to ns would lose.
	floats bool
}

// Series is one group of samples: times and values in ns.
type Series struct {
	Tags []Tag // the grouped tags, sorted by key
	T, X []int64

	NonFinite int64 // NaN or infinite float values skipped
	// Duplicates are records of a point written again (the same tag set
	// and time), dropped: the last written is kept, as InfluxDB keeps it.
	Duplicates int64
	// SameTime are records at the time of a record of another tag set in
	// the series (it groups several), dropped: the one of the tag set first
	// in key order is kept, whatever the order of the input.
	SameTime int64
	Unsorted int64 // records read before an earlier one (sorted since)

	domain []Tag // the first record's clock-domain tags outside Tags

	f   []float64 // with Query.floats: the values unrounded, parallel to X
	set []int32   // each sample's tag set (Collector.setKeys), parallel to X until Finish
}

// Name is the series' tags as key=value pairs joined by commas ("" for none).
func (s *Series) Name() string {
	var b strings.Builder
	for i, t := range s.Tags {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.Key + "=" + t.Value)
	}
	return b.String()
}

// Counts are the records a collection read and set aside.
type Counts struct {
	Records      int64 // records read, of any measurement
	Used         int64 // samples kept in some series
	MissingField int64 // records of the measurement without the field
	NonNumeric   int64 // string or boolean values
	NonFinite    int64 // NaN or infinite floats
	OutOfRange   int64 // outside Query.Start..Stop
	NoTime       int64 // records without a timestamp
	Duplicates   int64 // points written again: the last kept
	SameTime     int64 // at the time of another tag set's record in the series
	// Malformed counts lines that are not line protocol, including float
	// fields written as NaN or Inf, which line protocol has no syntax for.
	Malformed int64
}

// Collector groups records into series. Add them in input order, then call
// Finish.
type Collector struct {
	q      Query
	series map[string]*Series
	order  []*Series
	Counts Counts

	key []byte
	sel []Tag

	full    []byte           // a record's whole tag set, as key
	sets    map[string]int32 // tag set → index in setKeys
	setKeys []string

	firstMalformed string
	// sizes, when known, are how many records a new series will hold, by
	// its key: its slices are made that large at once, not grown.
	sizes map[string]int64

	// Progress, when set, receives a line "read N records from Source..."
	// about every second once reading has taken longer than one.
	Progress io.Writer
	Source   string
	start    time.Time
	last     time.Time
}

// NewCollector returns a Collector for q.
func NewCollector(q Query) (*Collector, error) {
	if q.Measurement == "" || (q.Field == "" && !q.TimeValue) {
		return nil, errors.New("a measurement and a field are required")
	}
	now := time.Now()
	return &Collector{q: q, series: map[string]*Series{}, sets: map[string]int32{}, start: now, last: now}, nil
}

// Value is a field value: exactly one of the kinds.
type Value struct {
	Kind  ValueKind
	Int   int64
	Float float64
}

// ValueKind is the type of a field value.
type ValueKind uint8

// The kinds of field values.
const (
	KindInt ValueKind = iota
	KindFloat
	KindOther // string, boolean: not an offset
)

// tick counts one record read and reports progress.
func (c *Collector) tick() {
	c.Counts.Records++
	if c.Progress == nil || c.Counts.Records%4096 != 0 {
		return
	}
	if now := time.Now(); now.Sub(c.start) > time.Second && now.Sub(c.last) >= time.Second {
		c.last = now
		fmt.Fprintf(c.Progress, "read %d records from %s...\n", c.Counts.Records, c.Source)
	}
}

// wantMeasurement reports whether records of measurement m are selected.
func (c *Collector) wantMeasurement(m []byte) bool { return string(m) == c.q.Measurement }

// Add adds one record of the selected measurement: its tags (any order; the
// slice is sorted in place), whether it has the field, the field's value and
// the time (hasTime false when the record has none).
func (c *Collector) Add(tags []Tag, hasField bool, v Value, t int64, hasTime bool) error {
	if c.q.TimeValue && (hasField || c.q.Field == "") {
		hasField, v = true, Value{Kind: KindInt, Int: t}
	}
	switch {
	case !hasField:
		c.Counts.MissingField++
		return nil
	case !hasTime:
		c.Counts.NoTime++
		return nil
	case c.q.Start != 0 && t < c.q.Start, c.q.Stop != 0 && t > c.q.Stop:
		c.Counts.OutOfRange++
		return nil
	}
	for _, w := range c.q.Where {
		if !slices.Contains(tags, w) {
			return nil
		}
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].Key < tags[j].Key })
	c.sel = c.sel[:0]
	if c.q.GroupBy == nil {
		c.sel = append(c.sel, tags...)
	} else {
		for _, tg := range tags {
			if slices.Contains(c.q.GroupBy, tg.Key) {
				c.sel = append(c.sel, tg)
			}
		}
	}
	c.key = appendKey(c.key[:0], c.sel)
	s := c.series[string(c.key)]
	if s == nil {
		s = &Series{Tags: slices.Clone(c.sel)}
		if n := int(min(c.sizes[string(c.key)], 1<<26)); n > 0 {
			s.T, s.X, s.set = make([]int64, 0, n), make([]int64, 0, n), make([]int32, 0, n)
		}
		for _, tg := range tags {
			if slices.Contains(domainTags, tg.Key) && !slices.ContainsFunc(s.Tags, func(x Tag) bool { return x.Key == tg.Key }) {
				s.domain = append(s.domain, tg)
			}
		}
		c.series[string(c.key)] = s
		c.order = append(c.order, s)
	} else if len(s.domain) > 0 {
		for _, d := range s.domain {
			if i := slices.IndexFunc(tags, func(x Tag) bool { return x.Key == d.Key }); i >= 0 && tags[i].Value != d.Value {
				return fmt.Errorf("series {%s} mixes clock domains %s=%s and %s=%s: add --group-by %s",
					s.Name(), d.Key, d.Value, d.Key, tags[i].Value, d.Key)
			}
		}
	}
	var x int64
	fv := float64(v.Int)
	if v.Kind == KindFloat {
		fv = v.Float
	}
	if c.q.Scale > 1 && v.Kind == KindInt {
		v = Value{Kind: KindFloat, Float: float64(v.Int) * float64(c.q.Scale)}
	} else if c.q.Scale > 1 && v.Kind == KindFloat {
		v.Float *= float64(c.q.Scale)
	}
	switch v.Kind {
	case KindInt:
		x = v.Int
	case KindFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			s.NonFinite++
			c.Counts.NonFinite++
			return nil
		}
		r := math.Round(v.Float)
		if r >= math.MaxInt64 || r < math.MinInt64 {
			s.NonFinite++
			c.Counts.NonFinite++
			return nil
		}
		x = int64(r)
	default:
		c.Counts.NonNumeric++
		return nil
	}
	if n := len(s.T); n > 0 && t < s.T[n-1] {
		s.Unsorted++
	}
	s.T = append(s.T, t)
	s.X = append(s.X, x)
	s.set = append(s.set, c.tagSet(tags))
	if c.q.floats {
		s.f = append(s.f, fv)
	}
	return nil
}

// appendKey appends tags as key=value pairs, each ended by a 0 byte.
func appendKey(b []byte, tags []Tag) []byte {
	for _, tg := range tags {
		b = append(append(append(append(b, tg.Key...), '='), tg.Value...), 0)
	}
	return b
}

// tagSet returns the index of a record's whole tag set (sorted tags) in
// c.setKeys, adding it when new: the identity, with the measurement and the
// time, of an InfluxDB point.
func (c *Collector) tagSet(tags []Tag) int32 {
	full := c.key // without GroupBy the series' key is the whole tag set
	if c.q.GroupBy != nil {
		c.full = appendKey(c.full[:0], tags)
		full = c.full
	}
	id, ok := c.sets[string(full)]
	if !ok {
		id = int32(len(c.setKeys))
		c.setKeys = append(c.setKeys, string(full))
		c.sets[string(full)] = id
	}
	return id
}

// Finish sorts each series by time, keeps one record per time (see
// keepOnePerTime) and returns the series in order of their names. It fails
// with ErrNoData when no sample was kept.
func (c *Collector) Finish() ([]*Series, error) {
	var out []*Series
	for _, s := range c.order {
		if s.Unsorted > 0 {
			idx := make([]int, len(s.T))
			for i := range idx {
				idx[i] = i
			}
			sort.SliceStable(idx, func(i, j int) bool { return s.T[idx[i]] < s.T[idx[j]] })
			s.T, s.X, s.set = permute(s.T, idx), permute(s.X, idx), permute(s.set, idx)
			if s.f != nil {
				s.f = permute(s.f, idx)
			}
		}
		w := c.keepOnePerTime(s)
		s.T, s.X, s.set = s.T[:w], s.X[:w], nil
		if s.f != nil {
			s.f = s.f[:w]
		}
		c.Counts.Duplicates += s.Duplicates
		c.Counts.SameTime += s.SameTime
		c.Counts.Used += int64(w)
		if w > 0 {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoData, c.describe())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// permute returns v in the order of idx.
func permute[T any](v []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, k := range idx {
		out[i] = v[k]
	}
	return out
}

// keepOnePerTime keeps one record of each time of the sorted series s, in
// place, and returns how many it kept. InfluxDB stores a point (measurement,
// tag set, time) once, the last written; so of records of one tag set at one
// time the last read is kept (the spool holds them in the order written) and
// the others counted as Duplicates. Several tag sets at one time (a series
// grouping them) are distinct points, but a series holds one sample a time:
// the record of the tag set first in key order is kept and the others
// counted as SameTime, so InfluxDB's answer (tag set after tag set) and the
// spool's records (in the order written) give the same series.
func (c *Collector) keepOnePerTime(s *Series) int {
	w := 0
	for i := 0; i < len(s.T); {
		j, keep := i+1, i
		for ; j < len(s.T) && s.T[j] == s.T[i]; j++ {
			if s.set[j] == s.set[keep] || c.setKeys[s.set[j]] < c.setKeys[s.set[keep]] {
				keep = j
			}
		}
		if j-i > 1 {
			sets := 0
			for k := i; k < j; k++ {
				if !slices.Contains(s.set[i:k], s.set[k]) {
					sets++
				}
			}
			s.Duplicates += int64(j - i - sets)
			s.SameTime += int64(sets - 1)
		}
		s.T[w], s.X[w] = s.T[keep], s.X[keep]
		if s.f != nil {
			s.f[w] = s.f[keep]
		}
		w++
		i = j
	}
	return w
}

// describe says what was read, for the ErrNoData message.
func (c *Collector) describe() string {
	n := c.Counts
	msg := fmt.Sprintf("%d records read, none of measurement %q with a numeric field %q", n.Records, c.q.Measurement, c.q.Field)
	if c.q.Field == "" {
		msg = fmt.Sprintf("%d records read, none of measurement %q", n.Records, c.q.Measurement)
	}
	var extra []string
	for _, e := range []struct {
		n    int64
		what string
	}{{n.MissingField, "without the field"}, {n.NonNumeric, "non-numeric"}, {n.NonFinite, "NaN or infinite"}, {n.OutOfRange, "outside the time range"}, {n.NoTime, "without a timestamp"}, {n.Malformed, "malformed"}} {
		if e.n > 0 {
			extra = append(extra, fmt.Sprintf("%d %s", e.n, e.what))
		}
	}
	if len(c.q.Where) > 0 {
		extra = append(extra, fmt.Sprintf("where %v", c.q.Where))
	}
	if len(extra) > 0 {
		msg += " (" + strings.Join(extra, ", ") + ")"
	}
	if c.firstMalformed != "" {
		msg += "; first malformed line: " + c.firstMalformed
	}
	return msg
}

// FirstMalformed describes the first malformed line ("" when none).
func (c *Collector) FirstMalformed() string { return c.firstMalformed }
