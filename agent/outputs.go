package agent

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// Outputs are where records go: standard output, a line-protocol file, the
// durable spool, and the InfluxDB shipper that drains the spool.
type Outputs struct {
	Sink    sink.Sink
	Files   []*sink.Writer
	Spool   *spool.Spool
	Shipper *influx.Shipper

	log          *slog.Logger
	lastSpoolErr string // the spool's flush failure last logged (self-metrics goroutine only)
}

// OpenOutputs opens the outputs cfg asks for.
func OpenOutputs(cfg *Config) (*Outputs, error) {
	o := &Outputs{}
	var m sink.Multi
	fail := func(err error) (*Outputs, error) {
		m.Close()
		return nil, err
	}
	if cfg.Output.Stdout {
		m = append(m, sink.NewWriter("stdout", os.Stdout))
	}
	if cfg.Output.File != "" {
		f, err := sink.OpenFile(cfg.Output.File)
		if err != nil {
			return fail(keyErr("output.file", "%v", err))
		}
		m = append(m, f)
		o.Files = append(o.Files, f)
	}
	if cfg.Spool.Enabled {
		sc := cfg.Spool
		sp, err := spool.Open(spool.Options{
			Dir: sc.Dir, SegmentBytes: sc.SegmentBytes, MaxBytes: sc.MaxBytes,
			FlushInterval: sc.FlushInterval, FsyncInterval: sc.FsyncInterval, Compress: sc.Compress,
			DeferFlush: true, // Agent.Run starts it: building the agent starts nothing
		})
		if err != nil {
			return fail(keyErr("spool.dir", "%v", err))
		}
		m = append(m, sp)
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
	o.Sink = m
	return o, nil
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
	for _, f := range o.Files {
		st := f.Stats()
		out = append(out, fmt.Sprintf("wrote %d records (%d bytes) to %s", st.Records, st.Bytes, f.Name()))
	}
	if o.Spool != nil {
		st := o.Spool.Stats()
		dropped := st.DroppedCap + st.DroppedBuffer + st.DroppedCorrupt
		if o.Shipper == nil {
			out = append(out, fmt.Sprintf("spool %s: %d points appended, %d dropped (cap %d, buffer %d, corrupt %d), %d bytes on disk",
				o.Spool.Dir(), st.Appended, dropped, st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.Bytes))
			return out
		}
		out = append(out, fmt.Sprintf("spool %s: %d points appended, %d acknowledged by InfluxDB, %d pending, %d dropped (cap %d, buffer %d, corrupt %d), %d dead-lettered, %d bytes on disk",
			o.Spool.Dir(), st.Appended, st.Acknowledged, st.Pending, dropped, st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.DeadLettered, st.Bytes))
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
func (o *Outputs) Close() error {
	return errors.Join(o.Sink.Close())
}

// selfRecords are the outputs' own counters.
func (o *Outputs) selfRecords(b *Batch, now int64) {
	if o.Spool != nil {
		st := o.Spool.Stats()
		if st.LastError != o.lastSpoolErr && o.log != nil { // once per change, not every interval
			if st.LastError != "" {
				o.log.Error("spool: writing to disk failed; unwritten points wait in a bounded buffer, beyond it they are dropped and counted (dropped_buffer)", "err", st.LastError, "dir", o.Spool.Dir())
			} else {
				o.log.Info("spool: writing to disk works again", "dir", o.Spool.Dir())
			}
		}
		o.lastSpoolErr = st.LastError
		b.Add("monagent_spool", now, nil,
			record.Uint("appended", st.Appended),
			record.Uint("rejected", st.Rejected),
			record.Uint("acknowledged", st.Acknowledged),
			record.Uint("pending", st.Pending),
			record.Uint("dropped_cap", st.DroppedCap),
			record.Uint("dropped_buffer", st.DroppedBuffer),
			record.Uint("dropped_corrupt", st.DroppedCorrupt),
			record.Uint("dead_lettered", st.DeadLettered),
			record.Uint("recovered", st.Recovered),
			record.Uint("truncated_bytes", st.TruncatedBytes),
			record.Uint("write_errors", st.WriteErrors),
			record.String("last_error", st.LastError),
			record.Uint("fsyncs", st.Fsyncs),
			record.Int("spool_bytes", st.Bytes),
			record.Int("segments", int64(st.Segments)),
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
