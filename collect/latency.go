package collect

import (
	"slices"

	"github.com/monagent/monagent/record"
)

// LatencyCap bounds the latency samples kept per series and interval (the
// latest ones); the maximum counts every event.
const LatencyCap = 1024

// Latency is the read latency of one event series — the time from the
// kernel's stamp of an event to the read that brought it to user space —
// over the last collection interval that had events: p50, p99 (of its
// latest 1,024 events), the maximum and the number of events.
// Add counts one event's latency; Fields appends the statistics of the
// last interval that had events, named pfx+latency_p50_ns and so on.
type Latency struct {
	lat  [LatencyCap]int64
	n    int // samples this interval (may exceed LatencyCap: it wraps)
	max  int64
	snap [4]int64 // p50, p99, max, samples of the last interval with events
}

func (l *Latency) Add(ns int64) {
	l.lat[l.n%LatencyCap] = ns
	if l.n == 0 || ns > l.max {
		l.max = ns
	}
	l.n++
}

// Close ends an interval: one that had events replaces the statistics; one
// without keeps the last (latency_samples says how many events they cover).
func (l *Latency) Close(scratch *[LatencyCap]int64) {
	n := min(l.n, LatencyCap)
	if n == 0 {
		return
	}
	s := scratch[:n]
	copy(s, l.lat[:n])
	slices.Sort(s)
	l.snap = [4]int64{rank(s, 50), rank(s, 99), l.max, int64(l.n)}
	l.n, l.max = 0, 0
}

func (l *Latency) Fields(f []record.Field, pfx string) []record.Field {
	return append(f, record.Int(pfx+"latency_p50_ns", l.snap[0]), record.Int(pfx+"latency_p99_ns", l.snap[1]),
		record.Int(pfx+"latency_max_ns", l.snap[2]), record.Int(pfx+"latency_samples", l.snap[3]))
}

// rank is the p-th percentile of sorted s (nearest rank).
func rank(s []int64, p int) int64 {
	i := (len(s)*p + 99) / 100
	return s[max(i, 1)-1]
}
