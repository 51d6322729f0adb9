package phc

import (
	"fmt"
	"sync/atomic"

	"github.com/monagent/monagent/timebase"
)

// DeviceDomain is the clock domain of a PHC device path (/dev/ptpN, or any
// path whose last element is ptpN).
func DeviceDomain(path string) (timebase.Domain, error) {
	n, err := indexFromPath(path)
	if err != nil {
		return timebase.DomainUnknown, err
	}
	return timebase.PHC(n), nil
}

// ParseEdges is the inverse of Edge.String for the edges a channel can be
// enabled for: rising, falling or both.
func ParseEdges(s string) (Edge, error) {
	for _, e := range []Edge{EdgeRising, EdgeFalling, EdgeBoth} {
		if s == e.String() {
			return e, nil
		}
	}
	return 0, fmt.Errorf("unknown extts edges %q (want rising, falling or both)", s)
}

// EdgeOf is the edge of an event on channel c: the one the driver reports,
// else the one the channel was enabled for when that is a single edge
// (rising when Edges is 0), else 0 (unknown).
func (c *ExttsChannel) EdgeOf(e *ExttsEvent) Edge {
	if ed := e.Edge(); ed == EdgeRising || ed == EdgeFalling {
		return ed
	}
	switch c.Edges {
	case 0:
		return EdgeRising
	case EdgeRising, EdgeFalling:
		return c.Edges
	}
	return 0
}

// ExttsTotals add up the counters of the successive readers of one set of
// channels (a reader reopened after a failure counts from zero). Add is for
// the reading goroutine; Stats may be called from any.
type ExttsTotals struct{ c exttsCounters }

// Add adds what a reader counted from its stats prev to cur (Extts.Stats)
// and returns the edges newly missed.
func (t *ExttsTotals) Add(prev, cur ExttsStats) (missed uint64) {
	add := func(c *atomic.Uint64, cur, prev uint64) uint64 {
		if cur <= prev {
			return 0
		}
		c.Add(cur - prev)
		return cur - prev
	}
	add(&t.c.events, cur.Events, prev.Events)
	add(&t.c.reads, cur.Reads, prev.Reads)
	add(&t.c.full, cur.FullReads, prev.FullReads)
	add(&t.c.backwards, cur.Backwards, prev.Backwards)
	add(&t.c.other, cur.OtherChannels, prev.OtherChannels)
	return add(&t.c.missed, cur.MissedEdges, prev.MissedEdges)
}

// Stats are the totals.
func (t *ExttsTotals) Stats() ExttsStats { return t.c.stats() }
