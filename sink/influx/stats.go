package influx

import (
	"fmt"
	"time"

	"github.com/monagent/monagent/record"
)

// Fields are the counters and state as the fields of a monagent_influx
// record (docs/schema.md).
func (st Stats) Fields() []record.Field {
	return []record.Field{
		record.Uint("batches", st.Batches), record.Uint("points", st.Points), record.Uint("bytes", st.Bytes),
		record.Uint("requests", st.Requests), record.Uint("retries", st.Retries), record.Uint("dead_lettered", st.DeadLettered),
		record.Uint("splits", st.Splits), record.Int("last_latency_ns", int64(st.LastLatency)), record.String("last_error", st.LastError),
		record.String("state", st.State), record.Int("last_status", int64(st.LastStatus)), record.Int("outage_start_ns", st.OutageStartNS),
		record.Level("consecutive_failures", st.ConsecutiveFailures), record.String("local_state", st.LocalState),
		record.Uint("reader_errors", st.ReaderErrors), record.Uint("ack_errors", st.AckErrors), record.Uint("dead_letter_errors", st.DeadLetterErrors),
		record.Uint("dead_letter_dropped", st.DeadLetterDropped),
	}
}

// Summary says what the shipper delivered and its state, for the end of a
// run: since when and why writes fail, and where the spool's dead-lettered
// lines wait.
func (s *Shipper) Summary() string {
	st := s.Stats()
	line := fmt.Sprintf("InfluxDB: %d points in %d batches, %d retries, state %s", st.Points, st.Batches, st.Retries, st.State)
	if st.State != StateOK {
		line += fmt.Sprintf(" since %s (last HTTP status %d: %s)", time.Unix(0, st.OutageStartNS).UTC().Format(time.RFC3339), st.LastStatus, st.LastError)
	}
	if dead := s.q.Stats().DeadLettered; dead > 0 {
		line += fmt.Sprintf("; %d dead-lettered lines in %s ('monagent spool replay-deadletter' ships them again once fixed)", dead, s.DeadLetterPath())
	}
	return line
}
