package agent

import (
	"slices"

	"github.com/monagent/monagent/record"
)

// latencyCap bounds the latency samples kept per series and interval (the
// latest ones); the maximum counts every event.
const latencyCap = 1024

// latencyStats is the read latency of one event series — the time from the
// kernel's stamp of an event to the read that brought it to user space —
// over the last collection interval that had events: p50, p99 (of its
// latest 1,024 events), the maximum and the number of events.
type latencyStats struct {
	lat  [latencyCap]int64
	n    int // samples this interval (may exceed latencyCap: it wraps)
	max  int64
	snap [4]int64 // p50, p99, max, samples of the last interval with events
}

func (l *latencyStats) add(ns int64) {
	l.lat[l.n%latencyCap] = ns
	if l.n == 0 || ns > l.max {
		l.max = ns
	}
	l.n++
}

// close ends an interval: one that had events replaces the statistics; one
// without keeps the last (latency_samples says how many events they cover).
func (l *latencyStats) close(scratch *[latencyCap]int64) {
	n := min(l.n, latencyCap)
	if n == 0 {
		return
	}
	s := scratch[:n]
	copy(s, l.lat[:n])
	slices.Sort(s)
	l.snap = [4]int64{rank(s, 50), rank(s, 99), l.max, int64(l.n)}
	l.n, l.max = 0, 0
}

func (l *latencyStats) fields(f []record.Field, pfx string) []record.Field {
	return append(f, record.Int(pfx+"latency_p50_ns", l.snap[0]), record.Int(pfx+"latency_p99_ns", l.snap[1]),
		record.Int(pfx+"latency_max_ns", l.snap[2]), record.Int(pfx+"latency_samples", l.snap[3]))
}

// rank is the p-th percentile of sorted s (nearest rank).
func rank(s []int64, p int) int64 {
	i := (len(s)*p + 99) / 100
	return s[max(i, 1)-1]
}
