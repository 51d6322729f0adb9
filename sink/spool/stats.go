package spool

import (
	"fmt"

	"github.com/monagent/monagent/record"
)

// Fields are the counters as the fields of a monagent_spool record
// (docs/schema.md).
func (st Stats) Fields() []record.Field {
	return []record.Field{
		record.Uint("appended", st.Appended), record.Uint("rejected", st.Rejected), record.Uint("acknowledged", st.Acknowledged),
		record.Level("pending", st.Pending), record.Level("buffered", st.Buffered),
		record.Uint("dropped_cap", st.DroppedCap), record.Uint("dropped_buffer", st.DroppedBuffer),
		record.Uint("dropped_disk", st.DroppedDisk), record.Uint("dropped_corrupt", st.DroppedCorrupt),
		record.Uint("dead_lettered", st.DeadLettered), record.Uint("recovered", st.Recovered),
		record.Uint("truncated_bytes", st.TruncatedBytes), record.Uint("write_errors", st.WriteErrors),
		record.String("last_error", st.LastError), record.Uint("fsyncs", st.Fsyncs),
		record.Int("spool_bytes", st.Bytes), record.Int("segments", int64(st.Segments)),
	}
}

// Summary says what the spool took and kept, for the end of a run. reader
// names what acknowledges its points (InfluxDB), "" when nothing reads it:
// then acknowledgements, pending and dead-lettered points are not named.
func (s *Spool) Summary(reader string) string {
	st := s.Stats()
	dropped := fmt.Sprintf("%d dropped (cap %d, buffer %d, corrupt %d, disk %d)",
		st.DroppedCap+st.DroppedBuffer+st.DroppedCorrupt+st.DroppedDisk, st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.DroppedDisk)
	if reader == "" {
		return fmt.Sprintf("spool %s: %d points appended, %s, %d bytes on disk", s.Dir(), st.Appended, dropped, st.Bytes)
	}
	return fmt.Sprintf("spool %s: %d points appended, %d acknowledged by %s, %d pending, %s, %d dead-lettered, %d bytes on disk",
		s.Dir(), st.Appended, st.Acknowledged, reader, st.Pending, dropped, st.DeadLettered, st.Bytes)
}
