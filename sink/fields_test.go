package sink_test

import (
	"testing"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// Each sink's counters as record fields are the schema's (docs/schema.md):
// every counter under its key, of its kind, in this order.
func TestStatsFields(t *testing.T) {
	fields := map[string][]record.Field{
		"monagent_spool": spool.Stats{Appended: 1, Rejected: 2, Acknowledged: 3, DeadLettered: 4, DroppedCap: 5, DroppedBuffer: 6, DroppedCorrupt: 7, DroppedDisk: 8,
			Recovered: 9, TruncatedBytes: 10, WriteErrors: 11, Fsyncs: 12, Bytes: 13, Segments: 14, Pending: 15, Buffered: 16, LastError: "e"}.Fields(),
		"monagent_output": sink.QueuedStats{Written: 1, Bytes: 2, Rejected: 3, DroppedFull: 4, DroppedError: 5, DroppedClose: 6, WriteErrors: 7, QueuedBytes: 8, LastError: "e"}.Fields(),
		"monagent_influx": influx.Stats{Batches: 1, Points: 2, Bytes: 3, Requests: 4, Retries: 5, DeadLettered: 6, Splits: 7, LastLatency: 8, LastError: "e",
			State: "s", LastStatus: 9, OutageStartNS: 10, ConsecutiveFailures: 11, LocalState: "l", ReaderErrors: 12, AckErrors: 13, DeadLetterErrors: 14, DeadLetterDropped: 15}.Fields(),
	}
	want := map[string]string{
		"monagent_spool": "appended:u=1 rejected:u=2 acknowledged:u=3 pending:u=15 buffered:u=16 dropped_cap:u=5 dropped_buffer:u=6 " +
			"dropped_disk:u=8 dropped_corrupt:u=7 dead_lettered:u=4 recovered:u=9 truncated_bytes:u=10 write_errors:u=11 " +
			"last_error:s=e fsyncs:u=12 spool_bytes:i=13 segments:i=14",
		"monagent_output": "written:u=1 bytes:u=2 rejected:u=3 dropped_full:u=4 dropped_error:u=5 dropped_close:u=6 write_errors:u=7 queued_bytes:i=8 last_error:s=e",
		"monagent_influx": "batches:u=1 points:u=2 bytes:u=3 requests:u=4 retries:u=5 dead_lettered:u=6 splits:u=7 last_latency_ns:i=8 " +
			"last_error:s=e state:s=s last_status:i=9 outage_start_ns:i=10 consecutive_failures:u=11 local_state:s=l " +
			"reader_errors:u=12 ack_errors:u=13 dead_letter_errors:u=14 dead_letter_dropped:u=15",
	}
	for m, fs := range fields {
		got := ""
		for i, f := range fs {
			if i > 0 {
				got += " "
			}
			got += f.Key + ":" + "iufbs"[f.Kind:][:1] + "=" + f.Value() // the kind's initial
		}
		if got != want[m] {
			t.Errorf("%s fields\n%s\nwant\n%s", m, got, want[m])
		}
	}
}
