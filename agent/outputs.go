package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// Outputs are where records go: the durable spool, the InfluxDB shipper that
// drains it, and the optional outputs (standard output, a line-protocol
// file). The spool is written first and never waits; each optional output
// queues its own copy, bounded by memory.output_queue_bytes, and drops it,
// counted, when its reader is slow or gone, so it never holds up the spool.
type Outputs struct {
	Sink     sink.Sink      // the outputs as one sink (the spool first)
	Optional []*sink.Queued // stdout, output.file
	Spool    *spool.Spool
	Shipper  *influx.Shipper

	log      *slog.Logger
	spoolLog faultlog.Log // the spool's flush failures (self-metrics goroutine only)
	// Each optional output's drops seen at the last self-metrics, and what of
	// them is logged (self-metrics goroutine only).
	optDropped []uint64
	optLog     []faultlog.Log
}

// OpenOutputs opens the outputs cfg asks for.
func OpenOutputs(cfg *Config) (*Outputs, error) {
	o := &Outputs{}
	fail := func(err error) (*Outputs, error) {
		o.fanout().Close()
		return nil, err
	}
	qb := int(cfg.Memory.OutputQueueBytes)
	if cfg.Output.Stdout {
		o.Optional = append(o.Optional, sink.Stdout(qb))
	}
	if cfg.Output.File != "" {
		f, err := sink.OpenFile(cfg.Output.File, qb)
		if err != nil {
			return fail(keyErr("output.file", "%v", err))
		}
		o.Optional = append(o.Optional, f)
	}
	o.optDropped, o.optLog = make([]uint64, len(o.Optional)), make([]faultlog.Log, len(o.Optional))
	if cfg.Spool.Enabled {
		opts := cfg.Spool.options()
		opts.DeferFlush = true // Agent.Run starts it: building the agent starts nothing
		sp, err := spool.Open(opts)
		if err != nil {
			return fail(keyErr("spool.dir", "%v", err))
		}
		o.Spool = sp
		if cfg.Influx.Enabled {
			ic := cfg.Influx
			token, err := ic.Token()
			if err != nil {
				return fail(err)
			}
			sh, err := influx.New(influx.Config{
				URL: ic.URL, Org: ic.Org, Bucket: ic.Bucket, Token: token,
				BatchPoints: ic.BatchPoints, BatchInterval: ic.BatchInterval, Timeout: ic.Timeout,
				MaxBackoff: ic.MaxBackoff, Gzip: ic.Gzip, DeadLetter: ic.DeadLetter,
			}, sp)
			if err != nil {
				return fail(keyErr("influx", "%v", err))
			}
			o.Shipper = sh
		}
	}
	o.Sink = o.fanout()
	return o, nil
}

// fanout is the outputs as one sink: the spool first, then each optional
// output.
func (o *Outputs) fanout() *sink.Fanout {
	if o.Spool == nil {
		return sink.NewFanout(nil, o.Optional...)
	}
	return sink.NewFanout(o.Spool, o.Optional...)
}

// SetLogger gives the shipper a logger for its state changes (401, database
// missing, unreachable, back again). Call it before the shipper runs.
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

// selfRecords are the outputs' own counters.
func (o *Outputs) selfRecords(b *collect.Batch, now int64) {
	if o.Spool != nil {
		st := o.Spool.Stats()
		if o.log != nil { // a failing disk is logged when it starts, changes and ends
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
