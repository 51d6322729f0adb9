package report

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/internal/testbed"
)

// TestRealInfluxd writes points with the v2 write API of a real influxd
// 1.8.10 (the testbed's) and reads them back through /query.
func TestRealInfluxd(t *testing.T) {
	bin := filepath.Join(testbed.CacheDir(), "influxd-"+testbed.InfluxdVersion, "influxd")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("influxd %s not built (%v): the testbed builds it into %s", testbed.InfluxdVersion, err, filepath.Dir(bin))
	}
	in := testbed.StartInfluxd(t, "mon")
	lp := lines(3, 14, -7, 20, 9, 1) + strings.ReplaceAll(lines(5, 5), "clock=realtime", "clock=tai")
	if st, body := in.Write("mon/autogen", lp); st != http.StatusNoContent {
		t.Fatalf("write: HTTP %d: %s", st, body)
	}
	q := Query{Measurement: "clock_offset", Field: "offset_ns", Where: []Tag{{"clock", "realtime"}}, Start: 1}
	c, _ := NewCollector(q)
	if err := c.ReadInflux(context.Background(), Influx{URL: in.URL, Bucket: "mon/autogen", Token: "user:pass"}); err != nil {
		t.Fatal(err)
	}
	ss, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := Compute(ss[0], Options{})
	_, want, _, _ := collect(t, lines(3, 14, -7, 20, 9, 1), q0, Options{})
	if len(ss) != 1 || got.N != 6 || got.Series["ref"] != "ptp0" || !near(got.StdNS, want[0].StdNS) || !near(got.ADev[0].Value, want[0].ADev[0].Value) {
		t.Errorf("read back %+v, want %+v", got, want[0])
	}

	// Issue 21 item 7: what influxd keeps of points written again and of
	// points of several tag sets at one time, the report of the same lines
	// keeps too.
	same, _, _ := sameTimeLP()
	same = strings.ReplaceAll(same, "clock_offset,", "same_time,")
	in.Write("mon/autogen", same)
	sq := Query{Measurement: "same_time", Field: "offset_ns", GroupBy: []string{"clock"}, Start: 1}
	c, _ = NewCollector(sq)
	if err := c.ReadInflux(context.Background(), Influx{URL: in.URL, Bucket: "mon/autogen", Token: "user:pass"}); err != nil {
		t.Fatal(err)
	}
	fromInflux, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c, _ = NewCollector(sq)
	if err := c.ReadLineProtocol(strings.NewReader(same)); err != nil {
		t.Fatal(err)
	}
	fromLines, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fromLines[0], fromInflux[0]; fmt.Sprint(a.T, a.X) != fmt.Sprint(b.T, b.X) {
		t.Errorf("the lines give %v %v, influxd's answer %v %v", a.T, a.X, b.T, b.X)
	}

	c, _ = NewCollector(Query{Measurement: "clock_offset", Field: "offset_ns"})
	err = c.ReadInflux(context.Background(), Influx{URL: in.URL, Bucket: "nosuchdb/autogen"})
	if err == nil || !strings.Contains(err.Error(), "database not found") {
		t.Errorf("unknown database: %v", err)
	}
}
