package status

import (
	"strings"
	"testing"

	"github.com/monagent/monagent/record"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRecordsAsPrometheusMetrics(t *testing.T) {
	var r Records
	host := record.Tag{Key: "host", Value: "boarda"}
	r.Set([]record.Record{
		{Measurement: "monagent_source", Tags: []record.Tag{host, {Key: "source", Value: "gpio:gpiochip0"}}, Fields: []record.Field{
			record.Uint("events", 1200), record.Uint("kernel_lost", 3), record.Int("ring_waiting", 7), record.Int("last_duration_ns", 1_500_000),
			record.String("last_error", "not shown")}},
		{Measurement: "monagent_spool", Tags: []record.Tag{host}, Fields: []record.Field{record.Level("pending", 42), record.Uint("dropped_disk", 5)}},
		{Measurement: "monagent_influx", Tags: []record.Tag{host}, Fields: []record.Field{record.String("state", "unreachable"), record.Int("outage_start_ns", 2_000_000_000)}},
	})
	want := `
# HELP monagent_influx_outage_start_seconds monagent self-metrics: monagent_influx outage_start_ns (docs/schema.md)
# TYPE monagent_influx_outage_start_seconds gauge
monagent_influx_outage_start_seconds 2
# HELP monagent_influx_state monagent self-metrics: monagent_influx state (docs/schema.md)
# TYPE monagent_influx_state gauge
monagent_influx_state{state="unreachable"} 1
# HELP monagent_source_events_total monagent self-metrics: monagent_source events (docs/schema.md)
# TYPE monagent_source_events_total counter
monagent_source_events_total{source="gpio:gpiochip0"} 1200
# HELP monagent_source_kernel_lost_total monagent self-metrics: monagent_source kernel_lost (docs/schema.md)
# TYPE monagent_source_kernel_lost_total counter
monagent_source_kernel_lost_total{source="gpio:gpiochip0"} 3
# HELP monagent_source_last_duration_seconds monagent self-metrics: monagent_source last_duration_ns (docs/schema.md)
# TYPE monagent_source_last_duration_seconds gauge
monagent_source_last_duration_seconds{source="gpio:gpiochip0"} 0.0015
# HELP monagent_source_ring_waiting monagent self-metrics: monagent_source ring_waiting (docs/schema.md)
# TYPE monagent_source_ring_waiting gauge
monagent_source_ring_waiting{source="gpio:gpiochip0"} 7
# HELP monagent_spool_dropped_disk_total monagent self-metrics: monagent_spool dropped_disk (docs/schema.md)
# TYPE monagent_spool_dropped_disk_total counter
monagent_spool_dropped_disk_total 5
# HELP monagent_spool_pending monagent self-metrics: monagent_spool pending (docs/schema.md)
# TYPE monagent_spool_pending gauge
monagent_spool_pending 42
`
	gathers(t, &r, want)
}

// A field's type on /metrics is what its record declares (record.Level),
// not a guess from its name: an unsigned "pending" not declared a level is
// a counter, a level of any name a gauge.
func TestRecordsTypedWhereDeclared(t *testing.T) {
	var r Records
	r.Set([]record.Record{{Measurement: "monagent_x", Fields: []record.Field{record.Uint("pending", 1), record.Level("depth", 2)}}})
	want := `
# HELP monagent_x_depth monagent self-metrics: monagent_x depth (docs/schema.md)
# TYPE monagent_x_depth gauge
monagent_x_depth 2
# HELP monagent_x_pending_total monagent self-metrics: monagent_x pending (docs/schema.md)
# TYPE monagent_x_pending_total counter
monagent_x_pending_total 1
`
	gathers(t, &r, want)
}

// gathers checks that c's metrics are want (text format).
func gathers(t *testing.T, c prometheus.Collector, want string) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
}
