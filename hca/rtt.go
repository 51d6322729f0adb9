package hca

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// RTT summarises the round trips measured between a pair.
//
// Outliers are cut at 1.5 × the 75th percentile: every RTT above that is
// dropped before the mean and minimum are taken. This cut keeps everything
// on a clean link (unlike dropping a fixed top 10 %) and still removes the
// long tail of delayed answers.
type rttSummary struct {
	Mean    int64 // mean of the kept RTTs (ns)
	Min     int64 // smallest RTT (ns)
	Kept    int
	Dropped int
	// MeanNS is Mean unrounded: the fitpoints subtract half of it, and
	// half a rounded mean biases every sample by up to 0.25 ns (0.5 ns
	// with an odd integer halved).
	MeanNS float64
}

// summarizeRTT applies the outlier cutoff to rtts and summarises the rest.
// rtts is not modified.
func summarizeRTT(rtts []int64) (rttSummary, error) {
	if len(rtts) == 0 {
		return rttSummary{}, fmt.Errorf("summarize rtt: %w", errNoSamples)
	}
	sorted := slices.Clone(rtts)
	slices.Sort(sorted)
	p75 := sorted[(len(sorted)-1)*3/4]
	cut := p75 + p75/2
	var sum, kept int64
	for _, r := range sorted {
		if r > cut {
			break
		}
		sum += r
		kept++
	}
	return rttSummary{
		Mean:    roundDiv(sum, kept),
		MeanNS:  float64(sum) / float64(kept),
		Min:     sorted[0],
		Kept:    int(kept),
		Dropped: len(sorted) - int(kept),
	}, nil
}

// measureRTT runs warmup ping-pongs from from to to whose results are thrown
// away (caches, ARP, a sleeping peer), then n that are summarised. Up to
// half of either, lost on every try, are left out (lossBudget).
func measureRTT(ctx context.Context, net Network, from, to, warmup, n int) (rttSummary, error) {
	if n < 1 {
		return rttSummary{}, fmt.Errorf("measure rtt %d->%d: %d exchanges: %w", from, to, n, errNoSamples)
	}
	wb := newLossBudget(warmup)
	for range warmup {
		if _, err := net.Exchange(ctx, from, to); err != nil && !wb.skip(err) {
			return rttSummary{}, fmt.Errorf("measure rtt %d->%d: warm-up: %w", from, to, wb.exceeded(warmup, err))
		}
	}
	b := newLossBudget(n)
	rtts := make([]int64, 0, n)
	for range n {
		e, err := net.Exchange(ctx, from, to)
		if err != nil {
			if b.skip(err) {
				continue
			}
			return rttSummary{}, fmt.Errorf("measure rtt %d->%d: %w", from, to, b.exceeded(n, err))
		}
		rtts = append(rtts, e.rtt())
	}
	return summarizeRTT(rtts)
}

// rttCache measures each directed pair's RTT once and then answers from the
// cache. It also remembers the best RTT seen on a pair by any measurement,
// which skampiOffset uses for its early stop. It is safe for concurrent
// use; concurrent Gets of one pair may both measure it (the later result is
// kept), which parallel rounds of disjoint pairs never do.
type rttCache struct {
	Warmup, N int // passed to measureRTT

	mu   sync.Mutex
	rtt  map[[2]int]rttSummary
	best map[[2]int]int64
}

// newRTTCache returns an empty cache that measures with warmup and n.
func newRTTCache(warmup, n int) *rttCache {
	return &rttCache{Warmup: warmup, N: n, rtt: map[[2]int]rttSummary{}, best: map[[2]int]int64{}}
}

// Get returns the pair's RTT, measuring it only if it is not cached yet.
func (c *rttCache) Get(ctx context.Context, net Network, from, to int) (rttSummary, error) {
	k := [2]int{from, to}
	c.mu.Lock()
	r, ok := c.rtt[k]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := measureRTT(ctx, net, from, to, c.Warmup, c.N)
	if err != nil {
		return rttSummary{}, err
	}
	c.mu.Lock()
	c.rtt[k] = r
	c.mu.Unlock()
	c.Observe(from, to, r.Min)
	return r, nil
}

// Best returns the smallest RTT seen on the pair, or 0 if none was.
func (c *rttCache) Best(from, to int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.best[[2]int{from, to}]
}

// Observe records an RTT seen on the pair by any measurement.
func (c *rttCache) Observe(from, to int, rtt int64) {
	k := [2]int{from, to}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.best[k]; !ok || rtt < b {
		c.best[k] = rtt
	}
}

// roundDiv is a/b rounded to nearest for b > 0.
func roundDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}
