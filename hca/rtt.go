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
type RTT struct {
	Mean    int64 // mean of the kept RTTs (ns)
	Min     int64 // smallest RTT (ns)
	Kept    int
	Dropped int
	// MeanNS is Mean unrounded: the fitpoints subtract half of it, and
	// half a rounded mean biases every sample by up to 0.25 ns (0.5 ns
	// with an odd integer halved).
	MeanNS float64
}

// SummarizeRTT applies the outlier cutoff to rtts and summarises the rest.
// rtts is not modified.
func SummarizeRTT(rtts []int64) (RTT, error) {
	if len(rtts) == 0 {
		return RTT{}, fmt.Errorf("summarize rtt: %w", ErrNoSamples)
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
	return RTT{
		Mean:    roundDiv(sum, kept),
		MeanNS:  float64(sum) / float64(kept),
		Min:     sorted[0],
		Kept:    int(kept),
		Dropped: len(sorted) - int(kept),
	}, nil
}

// MeasureRTT runs warmup ping-pongs from from to to whose results are thrown
// away (caches, ARP, a sleeping peer), then n that are summarised.
func MeasureRTT(ctx context.Context, net Network, from, to, warmup, n int) (RTT, error) {
	if n < 1 {
		return RTT{}, fmt.Errorf("measure rtt %d->%d: %d exchanges: %w", from, to, n, ErrNoSamples)
	}
	for range warmup {
		if _, err := net.Exchange(ctx, from, to); err != nil {
			return RTT{}, fmt.Errorf("measure rtt %d->%d: warm-up: %w", from, to, err)
		}
	}
	rtts := make([]int64, 0, n)
	for range n {
		e, err := net.Exchange(ctx, from, to)
		if err != nil {
			return RTT{}, fmt.Errorf("measure rtt %d->%d: %w", from, to, err)
		}
		rtts = append(rtts, e.RTT())
	}
	return SummarizeRTT(rtts)
}

// RTTCache measures each directed pair's RTT once and then answers from the
// cache. It also remembers the best RTT seen on a pair by any measurement,
// which SKaMPIOffset uses for its early stop. It is safe for concurrent
// use; concurrent Gets of one pair may both measure it (the later result is
// kept), which parallel rounds of disjoint pairs never do.
type RTTCache struct {
	Warmup, N int // passed to MeasureRTT

	mu   sync.Mutex
	rtt  map[[2]int]RTT
	best map[[2]int]int64
}

// NewRTTCache returns an empty cache that measures with warmup and n.
func NewRTTCache(warmup, n int) *RTTCache {
	return &RTTCache{Warmup: warmup, N: n, rtt: map[[2]int]RTT{}, best: map[[2]int]int64{}}
}

// Get returns the pair's RTT, measuring it only if it is not cached yet.
func (c *RTTCache) Get(ctx context.Context, net Network, from, to int) (RTT, error) {
	k := [2]int{from, to}
	c.mu.Lock()
	r, ok := c.rtt[k]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := MeasureRTT(ctx, net, from, to, c.Warmup, c.N)
	if err != nil {
		return RTT{}, err
	}
	c.mu.Lock()
	c.rtt[k] = r
	c.mu.Unlock()
	c.Observe(from, to, r.Min)
	return r, nil
}

// Best returns the smallest RTT seen on the pair, or 0 if none was.
func (c *RTTCache) Best(from, to int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.best[[2]int{from, to}]
}

// Observe records an RTT seen on the pair by any measurement.
func (c *RTTCache) Observe(from, to int, rtt int64) {
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
