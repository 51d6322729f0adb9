package collect

import (
	"context"
	"errors"
	"time"

	"github.com/monagent/monagent/record"
)

// Source is one kind of measurement. The agent calls Collect every Interval from
// one goroutine; Collect appends records to the batch.
type Source interface {
	Name() string
	Interval() time.Duration
	// Collect measures once. It returns ErrNoData when there is nothing to
	// measure by design (not an error), and may return an error together with
	// records it did collect.
	Collect(ctx context.Context, b *Batch) error
	Close() error
}

// SelfReporter is implemented by sources with counters of their own beyond the
// agent's per-source ones (e.g. PHC read-method fallbacks). The agent calls
// SelfFields on the source's collection goroutine right after each Collect and
// ships the latest snapshot with its self-metrics, so counters that only
// Collect writes need no lock; counters a reader goroutine writes are atomics.
type SelfReporter interface {
	SelfFields() []record.Field
}

// ErrNoData means a source had nothing to measure, by design.
var ErrNoData = errors.New("no data")

// Batch collects the records of one collection.
type Batch struct {
	Host    string // the host tag of every record
	Records []record.Record
}

// Add appends a record; the host tag is added to every record.
func (b *Batch) Add(measurement string, timeNS int64, tags []record.Tag, fields ...record.Field) {
	t := make([]record.Tag, 0, len(tags)+1)
	t = append(t, record.Tag{Key: "host", Value: b.Host})
	t = append(t, tags...)
	b.Records = append(b.Records, record.Record{Measurement: measurement, Tags: t, Fields: fields, TimeNS: timeNS})
}

// Backlogged is implemented by sources that hold events between
// collections (EventSource: its ring): how many wait, of how many it holds.
// The agent may put a collection off while its outputs are behind, leaving
// the events where they cost least, until the backlog reaches half.
type Backlogged interface {
	Backlog() (waiting, capacity int)
}
