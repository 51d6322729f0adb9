package sink

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// OutputsConfig is which outputs to open.
type OutputsConfig struct {
	Stdout     bool
	File       string // a line-protocol file; "" for none
	QueueBytes int    // each optional output's queue
	Spool      *spool.Options
	Influx     *influx.Config // the shipper of the spool (needs it)
}

// OpenError says which output could not be opened: "file", "spool" or
// "influx".
type OpenError struct {
	Output string
	Err    error
}

func (e *OpenError) Error() string { return e.Output + ": " + e.Err.Error() }
func (e *OpenError) Unwrap() error { return e.Err }

// Outputs are where records go: the durable spool, the InfluxDB shipper that
// drains it, and the optional outputs (standard output, a line-protocol
// file). The spool is written first and never waits; each optional output
// queues its own copy, bounded by its queue bytes, and drops it, counted,
// when its reader is slow or gone, so it never holds up the spool.
type Outputs struct {
	Sink     Sink      // the outputs as one sink (the spool first)
	Optional []*Queued // stdout, the file
	Spool    *spool.Spool
	Shipper  *influx.Shipper

	log      *slog.Logger
	spoolLog faultlog.Log // the spool's flush failures (self-metrics goroutine only)
	// Each optional output's drops seen at the last self-metrics, and what of
	// them is logged (self-metrics goroutine only).
	optDropped []uint64
	optLog     []faultlog.Log
}

// OpenOutputs opens the outputs c asks for; on a failure it closes those
// it opened.
func OpenOutputs(c OutputsConfig) (*Outputs, error) {
	o := &Outputs{}
	fail := func(output string, err error) (*Outputs, error) {
		o.fanout().Close()
		return nil, &OpenError{Output: output, Err: err}
	}
	if c.Stdout {
		o.Optional = append(o.Optional, Stdout(c.QueueBytes))
	}
	if c.File != "" {
		f, err := OpenFile(c.File, c.QueueBytes)
		if err != nil {
			return fail("file", err)
		}
		o.Optional = append(o.Optional, f)
	}
	o.optDropped, o.optLog = make([]uint64, len(o.Optional)), make([]faultlog.Log, len(o.Optional))
	if c.Spool != nil {
		sp, err := spool.Open(*c.Spool)
		if err != nil {
			return fail("spool", err)
		}
		o.Spool = sp
		if c.Influx != nil {
			if o.Shipper, err = influx.New(*c.Influx, sp); err != nil {
				return fail("influx", err)
			}
		}
	}
	o.Sink = o.fanout()
	return o, nil
}

// fanout is the outputs as one sink: the spool first, then each optional
// output.
func (o *Outputs) fanout() *Fanout {
	if o.Spool == nil {
		return NewFanout(nil, o.Optional...)
	}
	return NewFanout(o.Spool, o.Optional...)
}

// SetLogger gives the outputs a logger for their state changes (the
// shipper's 401, database missing, unreachable, back again; a failing disk;
// a slow reader). Call it before they run.
func (o *Outputs) SetLogger(l *slog.Logger) {
	o.log = l
	if o.Shipper != nil {
		o.Shipper.SetLogger(l)
	}
}

// Summary says where records went, for the end of a run. InfluxDB is named
// only when it is configured.
func (o *Outputs) Summary() []string {
	var out []string
	for _, q := range o.Optional {
		out = append(out, q.Summary())
	}
	switch {
	case o.Spool != nil && o.Shipper != nil:
		out = append(out, o.Spool.Summary("InfluxDB"), o.Shipper.Summary())
	case o.Spool != nil:
		out = append(out, o.Spool.Summary(""))
	}
	return out
}

// Close flushes and closes every output; the spool fsyncs what it holds.
func (o *Outputs) Close() error { return o.Sink.Close() }

// Adder takes records (a collect.Batch).
type Adder interface {
	Add(measurement string, timeNS int64, tags []record.Tag, fields ...record.Field)
}

// SelfRecords adds the outputs' own counters at now (monagent_spool,
// monagent_output, monagent_influx), and logs a failing disk and a slow
// reader when it starts, changes and ends. Call it from one goroutine.
func (o *Outputs) SelfRecords(b Adder, now int64) {
	if o.Spool != nil {
		st := o.Spool.Stats()
		if o.log != nil {
			var failed error
			if st.LastError != "" {
				failed = fmt.Errorf("%s (unwritten points wait in memory up to spool.buffer_bytes, beyond it they are dropped and counted in dropped_disk; writing resumes by itself once the disk takes it)", st.LastError)
			}
			o.spoolLog.Note(o.log, time.Unix(0, now), failed, "spool: writing to disk", "dir", o.Spool.Dir())
		}
		b.Add("monagent_spool", now, nil, st.Fields()...)
	}
	for i, q := range o.Optional {
		st := q.Stats()
		// A slow reader is a state, logged when it starts and ends (an
		// interval with no new drop), not once per dropped batch.
		var slow error
		if d := st.DroppedFull + st.DroppedError; d > o.optDropped[i] {
			slow = fmt.Errorf("%d records not written since the last interval (its reader is slower than the records, or writing fails: %s); the spool has them all", d-o.optDropped[i], st.LastError)
			o.optDropped[i] = d
		}
		if o.log != nil {
			o.optLog[i].Note(o.log, time.Unix(0, now), slow, "output "+q.Name())
		}
		b.Add("monagent_output", now, []record.Tag{{Key: "output", Value: q.Name()}}, st.Fields()...)
	}
	if o.Shipper != nil {
		b.Add("monagent_influx", now, nil, o.Shipper.Stats().Fields()...)
	}
}
