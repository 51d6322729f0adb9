package collect

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
)

// Counted is a source with the counts of its collections (the agent ships
// them as monagent_source): collections, records, errors, collections with
// nothing by design (ErrNoData), collections put off (Defer), the last
// one's duration and error, and the
// source's own self-metrics (SelfReporter), taken right after each
// collection on the goroutine that collects, so that counters only Collect
// writes need no lock. Fields is safe beside Collect.
type Counted struct {
	Source Source

	collections, records, errors, nodata, deferred atomic.Uint64
	lastDur                                        atomic.Int64
	mu                                             sync.Mutex
	lastErr                                        string
	self                                           []record.Field
}

// Collect collects once into b, counts it, and returns the source's error.
func (c *Counted) Collect(ctx context.Context, b *Batch) error {
	start := time.Now()
	n := len(b.Records)
	err := c.Source.Collect(ctx, b)
	c.lastDur.Store(int64(time.Since(start)))
	c.collections.Add(1)
	c.records.Add(uint64(len(b.Records) - n))
	var self []record.Field
	if sr, ok := c.Source.(SelfReporter); ok {
		self = sr.SelfFields()
	}
	c.mu.Lock()
	switch {
	case err == nil:
	case errors.Is(err, ErrNoData):
		c.nodata.Add(1)
	default:
		c.errors.Add(1)
		c.lastErr = err.Error()
	}
	if self != nil {
		c.self = self
	}
	c.mu.Unlock()
	return err
}

// Defer counts a collection put off (the agent's outputs were behind).
func (c *Counted) Defer() { c.deferred.Add(1) }

// Fields are the counts, then the source's latest self-metrics.
func (c *Counted) Fields() []record.Field {
	c.mu.Lock()
	lastErr, self := c.lastErr, c.self
	c.mu.Unlock()
	f := []record.Field{
		record.Uint("collections", c.collections.Load()),
		record.Uint("records", c.records.Load()),
		record.Uint("errors", c.errors.Load()),
		record.Uint("no_data", c.nodata.Load()),
		record.Uint("deferred", c.deferred.Load()),
		record.Int("last_duration_ns", c.lastDur.Load()),
		record.String("last_error", lastErr),
	}
	return append(f, self...)
}
