package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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

// Issue 38 item 6: Run over InfluxDB reads a batch of groups at a time
// (runByGroup);
// its report is the report of the same lines read whole, whether a group is
// one tag set, several (a host's two ports, grouped by host) or the records
// lacking a group-by tag (host=""), and with a --where and time bounds.
func TestRunByGroupAsReadWhole(t *testing.T) {
	bin := filepath.Join(testbed.CacheDir(), "influxd-"+testbed.InfluxdVersion, "influxd")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("influxd %s not built (%v): the testbed builds it into %s", testbed.InfluxdVersion, err, filepath.Dir(bin))
	}
	in := testbed.StartInfluxd(t, "mon")
	var lp strings.Builder
	for i := int64(0); i < 200; i++ {
		ts := 1_700_000_000_000_000_000 + i*1e9
		fmt.Fprintf(&lp, "clock_offset,clock=realtime,host=a,ref=ptp0 offset_ns=%di %d\n", i%7-3, ts)
		fmt.Fprintf(&lp, "clock_offset,clock=realtime,host=a,port=2,ref=ptp0 offset_ns=%di %d\n", 37e9+i%5, ts+5e8)
		fmt.Fprintf(&lp, "clock_offset,clock=realtime,host=b,ref=ptp0 offset_ns=%di %d\n", i%11*3/2, ts)
		fmt.Fprintf(&lp, "clock_offset,clock=realtime,ref=ptp0 offset_ns=%di %d\n", i*i%13, ts) // no host
	}
	if st, body := in.Write("mon/autogen", lp.String()); st != http.StatusNoContent {
		t.Fatalf("write: HTTP %d: %s", st, body)
	}
	defaultBatch := batchPoints
	file := filepath.Join(t.TempDir(), "all.lp")
	os.WriteFile(file, []byte(lp.String()), 0o644)
	for _, q := range []Query{
		{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"host"}},
		{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"host", "clock"}},
		{Measurement: "clock_offset", Field: "offset_ns"},
		{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"nosuchtag"}, Where: []Tag{{"ref", "ptp0"}}},
		{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}, Where: []Tag{{"host", "a"}}, Start: 1_700_000_010_000_000_000, Stop: 1_700_000_100_000_000_000},
	} {
		report := func(input string, o RunOptions) (string, string) {
			var out, errw strings.Builder
			err := Run(context.Background(), Input{Paths: []string{input}, Influx: Influx{Bucket: "mon/autogen"}}, q, o, &out, &errw)
			if err != nil {
				return "", err.Error()
			}
			return out.String(), errw.String()
		}
		o := RunOptions{Format: "json"}
		if !byGroup(Input{Paths: []string{in.URL}}, q, o) {
			t.Fatalf("%+v: not read by group", q)
		}
		// Every group in one query, two in a query, each alone.
		var grouped, gerr string
		for _, n := range []int64{1 << 20, 450, 1} {
			batchPoints = n
			g, e := report(in.URL, o)
			if grouped != "" && g != grouped {
				t.Errorf("group by %v where %v: batches of %d points give\n%.1500s%s\nnot\n%.1500s", q.GroupBy, q.Where, n, g, e, grouped)
			}
			grouped, gerr = g, e
		}
		batchPoints = defaultBatch
		// InfluxDB's answer read whole, as Run read it before.
		var held strings.Builder
		series, err := read(context.Background(), Input{Paths: []string{in.URL}, Influx: Influx{Bucket: "mon/autogen"}}, q, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		var rs []*Result
		for _, s := range series {
			r, err := Compute(s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		WriteJSON(&held, rs)
		// The file: in time order, where InfluxDB answers a tag set after
		// another (so the records read unsorted differ).
		whole, werr := report(file, o)
		unsorted := regexp.MustCompile(`"unsorted": \d+`)
		if grouped == "" || grouped != held.String() || unsorted.ReplaceAllString(grouped, "") != unsorted.ReplaceAllString(whole, "") {
			t.Errorf("group by %v where %v: read by group\n%.1500s%s\nInfluxDB's answer read whole\n%.1500s\nthe file\n%.1500s%s",
				q.GroupBy, q.Where, grouped, gerr, held.String(), whole, werr)
		}
	}
	// No record in the range: the error names what was read, as when read whole.
	q := Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"host"}, Start: 1}
	q.Stop = 2
	err := Run(context.Background(), Input{Paths: []string{in.URL}, Influx: Influx{Bucket: "mon/autogen"}}, q, RunOptions{Format: "json"}, io.Discard, io.Discard)
	if !errors.Is(err, ErrNoData) {
		t.Errorf("no records in range: %v", err)
	}
}
