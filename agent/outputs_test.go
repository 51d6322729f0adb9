package agent

import (
	"strings"
	"testing"

	"github.com/monagent/monagent/record"
)

// Issue 10 item 18: the run summary names InfluxDB only when it is configured;
// with it, it says what InfluxDB acknowledged and the shipper's state.
func TestSummaryMentionsInfluxOnlyWhenConfigured(t *testing.T) {
	for _, withInflux := range []bool{false, true} {
		cfg := Default()
		cfg.Spool.Enabled = true
		cfg.Spool.Dir = t.TempDir()
		cfg.Influx.Enabled = withInflux
		cfg.Influx.URL = "http://127.0.0.1:1"
		cfg.Influx.Bucket = "db/autogen"
		cfg.Influx.TokenEnv = ""
		o, err := OpenOutputs(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		o.Spool.Append([]record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", 1)}, TimeNS: 1}})
		text := strings.Join(o.Summary(), "\n")
		o.Close()
		mentions := strings.Contains(text, "InfluxDB") || strings.Contains(text, "dead-letter")
		if mentions != withInflux {
			t.Fatalf("influx configured %v, summary:\n%s", withInflux, text)
		}
		if withInflux && (!strings.Contains(text, "acknowledged by InfluxDB") || !strings.Contains(text, "state ok")) {
			t.Fatalf("summary with InfluxDB:\n%s", text)
		}
		if !withInflux && !strings.Contains(text, "1 points appended, 0 dropped") {
			t.Fatalf("summary without InfluxDB:\n%s", text)
		}
	}
}
