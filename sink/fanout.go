package sink

import (
	"errors"
	"sync"

	"github.com/monagent/monagent/record"
)

// Fanout writes each batch to a durable sink first (the spool), then to
// each optional output, which queues its own copy (see Queued).
type Fanout struct {
	durable  Sink // nil: none
	optional []*Queued
}

// NewFanout returns a sink writing to durable (nil for none), then to each
// of optional.
func NewFanout(durable Sink, optional ...*Queued) *Fanout {
	return &Fanout{durable: durable, optional: optional}
}

// Write implements Sink. Neither the durable sink nor an optional output
// waits. An error says what the durable sink refused or what could not be
// encoded; an optional output's full queue is its own drop, counted in its
// stats, not an error of every batch.
func (f *Fanout) Write(recs []record.Record) error {
	var errs []error
	if f.durable != nil {
		errs = append(errs, f.durable.Write(recs))
	}
	for _, q := range f.optional {
		if err := q.Write(recs); !errors.Is(err, ErrQueueFull) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Idle implements Idler: the durable sink is told, if it is one. The
// optional outputs write each batch as it comes.
func (f *Fanout) Idle() {
	if d, ok := f.durable.(Idler); ok {
		d.Idle()
	}
}

// Close implements Sink: the optional outputs get their grace (CloseGrace)
// together, then the durable sink closes (the spool writes and fsyncs what
// it holds).
func (f *Fanout) Close() error {
	errs := make([]error, len(f.optional)+1)
	var wg sync.WaitGroup
	for i, q := range f.optional {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = q.Close()
		}()
	}
	wg.Wait()
	if f.durable != nil {
		errs[len(f.optional)] = f.durable.Close()
	}
	return errors.Join(errs...)
}
