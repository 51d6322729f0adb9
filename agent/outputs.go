package agent

import (
	"fmt"
	"github.com/monagent/monagent/collect"
	"log/slog"
	"time"

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
	spoolLog changeLog // the spool's flush failures (self-metrics goroutine only)
	// Each optional output's drops seen at the last self-metrics, and what of
	// them is logged (self-metrics goroutine only).
	optDropped []uint64
	optLog     []changeLog
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
	o.optDropped, o.optLog = make([]uint64, len(o.Optional)), make([]changeLog, len(o.Optional))
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
		st := q.Stats()
		line := fmt.Sprintf("wrote %d records (%d bytes) to %s", st.Written, st.Bytes, q.Name())
		if lost := st.DroppedFull + st.DroppedError + st.DroppedClose; lost > 0 {
			line += fmt.Sprintf("; %d not written (queue full %d, write errors %d, at close %d)", lost, st.DroppedFull, st.DroppedError, st.DroppedClose)
		}
		out = append(out, line)
	}
	if o.Spool != nil {
		st := o.Spool.Stats()
		dropped := st.DroppedCap + st.DroppedBuffer + st.DroppedCorrupt + st.DroppedDisk
		if o.Shipper == nil {
			out = append(out, fmt.Sprintf("spool %s: %d points appended, %d dropped (cap %d, buffer %d, corrupt %d, disk %d), %d bytes on disk",
				o.Spool.Dir(), st.Appended, dropped, st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.DroppedDisk, st.Bytes))
			return out
		}
		out = append(out, fmt.Sprintf("spool %s: %d points appended, %d acknowledged by InfluxDB, %d pending, %d dropped (cap %d, buffer %d, corrupt %d, disk %d), %d dead-lettered, %d bytes on disk",
			o.Spool.Dir(), st.Appended, st.Acknowledged, st.Pending, dropped, st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.DroppedDisk, st.DeadLettered, st.Bytes))
		sh := o.Shipper.Stats()
		line := fmt.Sprintf("InfluxDB: %d points in %d batches, %d retries, state %s", sh.Points, sh.Batches, sh.Retries, sh.State)
		if sh.State != influx.StateOK {
			line += fmt.Sprintf(" since %s (last HTTP status %d: %s)", time.Unix(0, sh.OutageStartNS).UTC().Format(time.RFC3339), sh.LastStatus, sh.LastError)
		}
		if st.DeadLettered > 0 {
			line += fmt.Sprintf("; %d dead-lettered lines in %s ('monagent spool replay-deadletter' ships them again once fixed)", st.DeadLettered, o.Shipper.DeadLetterPath())
		}
		out = append(out, line)
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
			o.spoolLog.note(o.log, time.Unix(0, now), failed, "spool: writing to disk", "dir", o.Spool.Dir())
		}
		b.Add("monagent_spool", now, nil,
			record.Uint("appended", st.Appended), record.Uint("rejected", st.Rejected), record.Uint("acknowledged", st.Acknowledged),
			record.Uint("pending", st.Pending), record.Uint("buffered", st.Buffered),
			record.Uint("dropped_cap", st.DroppedCap), record.Uint("dropped_buffer", st.DroppedBuffer),
			record.Uint("dropped_disk", st.DroppedDisk), record.Uint("dropped_corrupt", st.DroppedCorrupt),
			record.Uint("dead_lettered", st.DeadLettered), record.Uint("recovered", st.Recovered),
			record.Uint("truncated_bytes", st.TruncatedBytes), record.Uint("write_errors", st.WriteErrors),
			record.String("last_error", st.LastError), record.Uint("fsyncs", st.Fsyncs),
			record.Int("spool_bytes", st.Bytes), record.Int("segments", int64(st.Segments)),
		)
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
			o.optLog[i].note(o.log, time.Unix(0, now), slow, "output "+q.Name())
		}
		b.Add("monagent_output", now, []record.Tag{{Key: "output", Value: q.Name()}},
			record.Uint("written", st.Written),
			record.Uint("bytes", st.Bytes),
			record.Uint("rejected", st.Rejected),
			record.Uint("dropped_full", st.DroppedFull),
			record.Uint("dropped_error", st.DroppedError),
			record.Uint("dropped_close", st.DroppedClose),
			record.Uint("write_errors", st.WriteErrors),
			record.Int("queued_bytes", st.QueuedBytes),
			record.String("last_error", st.LastError),
		)
	}
	if o.Shipper != nil {
		st := o.Shipper.Stats()
		b.Add("monagent_influx", now, nil,
			record.Uint("batches", st.Batches),
			record.Uint("points", st.Points),
			record.Uint("bytes", st.Bytes),
			record.Uint("requests", st.Requests),
			record.Uint("retries", st.Retries),
			record.Uint("dead_lettered", st.DeadLettered),
			record.Uint("splits", st.Splits),
			record.Int("last_latency_ns", int64(st.LastLatency)),
			record.String("last_error", st.LastError),
			record.String("state", st.State),
			record.Int("last_status", int64(st.LastStatus)),
			record.Int("outage_start_ns", st.OutageStartNS),
			record.Uint("consecutive_failures", st.ConsecutiveFailures),
			record.String("local_state", st.LocalState),
			record.Uint("reader_errors", st.ReaderErrors),
			record.Uint("ack_errors", st.AckErrors),
			record.Uint("dead_letter_errors", st.DeadLetterErrors),
		)
	}
}
