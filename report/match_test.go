package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const t0 = 1_700_000_000_000_000_000

// twoBoards is line protocol of two boards (host b1, b2) stamping the rising
// edges of one 10 Hz square wave (edges 100 ms apart; b1 also its falling
// edges, which --where edge=rising leaves out). b2 stamps edge k at b1's
// time + 3500 ns + (k%3 − 1)·100 ns; b1 misses edge 3, b2 edge 7. The
// global_ns fields are the record time + 7 ns (b1) and − 13 ns (b2), their
// bounds 100 + k (b1) and 200 + 2k (b2). A third board b3 stamps every edge
// at b1's time − 1 µs.
func twoBoards() string {
	var b strings.Builder
	for k := int64(0); k < 10; k++ {
		ta := t0 + k*100_000_000
		tb := ta + 3500 + (k%3-1)*100
		if k != 3 {
			fmt.Fprintf(&b, "gpio_event,chip=gpiochip0,edge=rising,host=b1,line=17,name=sq kernel_ns=%di,global_ns=%di,global_bound_ns=%di %d\n", k, ta+7, 100+k, ta)
		}
		if k != 7 {
			fmt.Fprintf(&b, "gpio_event,chip=gpiochip0,edge=rising,host=b2,line=17,name=sq kernel_ns=%di,global_ns=%di,global_bound_ns=%di %d\n", k, tb-13, 200+2*k, tb)
		}
		fmt.Fprintf(&b, "gpio_event,chip=gpiochip0,edge=falling,host=b1,line=17,name=sq kernel_ns=%di %d\n", k, ta+50_000_000)
		fmt.Fprintf(&b, "gpio_event,chip=gpiochip0,edge=rising,host=b3,line=17,name=sq kernel_ns=%di %d\n", k, ta-1000)
	}
	return b.String()
}

func writeLP(t *testing.T, lp string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.lp")
	if err := os.WriteFile(p, []byte(lp), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

var rising = []Tag{{"edge", "rising"}}

// TestMatchKnownOffsets: the pairs and offsets of eq. 3 exactly, a missed
// edge on each side costing one pair each, Δ_ISR subtracted, the default
// window 0.4 × 100 ms, on the record times and on global_ns with its bounds.
func TestMatchKnownOffsets(t *testing.T) {
	c, _ := NewCollector(Query{Measurement: "gpio_event", TimeValue: true, GroupBy: []string{"host"}, Where: rising})
	if err := c.ReadLineProtocol(strings.NewReader(twoBoards())); err != nil {
		t.Fatal(err)
	}
	evs, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	ss, infos, err := MatchSeries(evs, nil, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, DeltaISR: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var want, wantT []int64
	for _, k := range []int64{0, 1, 2, 4, 5, 6, 8, 9} {
		want = append(want, 2500+(k%3-1)*100)
		wantT = append(wantT, t0+k*100_000_000)
	}
	if len(ss) != 1 || !slices.Equal(ss[0].X, want) || !slices.Equal(ss[0].T, wantT) {
		t.Fatalf("offsets %v at %v, want %v at %v", ss[0].X, ss[0].T, want, wantT)
	}
	in := infos[0]
	if in.Pairs != 8 || in.UnmatchedR != 1 || in.UnmatchedO != 1 || in.EventsRef != 9 || in.EventsOth != 9 || in.WindowNS != 40_000_000 || in.BoundMeanNS != nil {
		t.Errorf("info %+v", *in)
	}

	// Through Run, JSON, on global_ns: offsets 20 ns lower, bounds summed.
	var out, errw bytes.Buffer
	m := MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2", "b3"}, TimeField: "global_ns", DeltaISR: 1000}
	err = Run(context.Background(), Input{Paths: []string{writeLP(t, twoBoards())}}, Query{Measurement: "gpio_event", Where: rising},
		RunOptions{Format: "json", Match: &m}, &out, &errw)
	if err == nil || !strings.Contains(err.Error(), "match: no events with host=b3 (found host=b1, b2)") {
		t.Fatalf("b3 has no global_ns: err %v", err)
	}
	m.Others = []string{"b2"}
	out.Reset()
	if err := Run(context.Background(), Input{Paths: []string{writeLP(t, twoBoards())}}, Query{Measurement: "gpio_event", Where: rising},
		RunOptions{Format: "json", Match: &m}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var got []Result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	g := got[0]
	if len(got) != 1 || g.Series["match"] != "host=b1 vs host=b2" || g.N != 8 || g.MeanNS != (NS{Rel: 2480}) || g.MaxAbsNS != 2580 || g.P50NS != (NS{Rel: 2480}) {
		t.Errorf("json: %+v", g)
	}
	mi := g.Match
	// bounds: (100 + k) + (200 + 2k) over k = 0,1,2,4,5,6,8,9: mean 300 + 3·35/8, max 327
	if mi == nil || mi.TimeField != "global_ns" || mi.BoundField != "global_bound_ns" || mi.BoundPairs != 8 ||
		*mi.BoundMeanNS != 313.125 || *mi.BoundMaxNS != 327 || mi.UnmatchedR != 1 || mi.UnmatchedO != 1 || mi.DeltaISRNS != 1000 {
		t.Errorf("match %+v", mi)
	}
	if !strings.Contains(errw.String(), "match host=b1 vs host=b2: 8 pairs of 9 and 9 events; unmatched: 1 of host=b1, 1 of host=b2 (window 40ms, Δ_ISR 1µs, times: global_ns)") {
		t.Errorf("stderr: %s", errw.String())
	}

	// Several others: one series each; b3 is 1 µs early on every edge.
	out.Reset()
	m = MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b3", "b2"}, Window: 1_000_000}
	if err := Run(context.Background(), Input{Paths: []string{writeLP(t, twoBoards())}}, Query{Measurement: "gpio_event", Where: rising},
		RunOptions{Format: "text", Match: &m}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"match host=b1 vs host=b3  9  -1 µs", "match host=b1 vs host=b2  8  3.5 µs", "unmatched: 0 of host=b1, 1 of host=b3 (window 1ms"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, out.String())
		}
	}
}

// TestMatchBadInput: one clear error each.
func TestMatchBadInput(t *testing.T) {
	for _, spec := range []string{"host", "host=b1", "=b1,b2", "host=b1,", "host=b1,b1", ""} {
		if _, err := ParseMatch(spec); err == nil || !strings.HasPrefix(err.Error(), "--match ") {
			t.Errorf("ParseMatch(%q): %v", spec, err)
		}
	}
	if m, err := ParseMatch("host=b1,b2,b3"); err != nil || m.Tag != "host" || m.Ref != "b1" || !slices.Equal(m.Others, []string{"b2", "b3"}) {
		t.Errorf("ParseMatch: %+v %v", m, err)
	}
	path := writeLP(t, twoBoards())
	run := func(q Query, m MatchOptions) error {
		var out, errw bytes.Buffer
		return Run(context.Background(), Input{Paths: []string{path}}, q, RunOptions{Match: &m}, &out, &errw)
	}
	q := Query{Measurement: "gpio_event", Where: rising}
	for _, tc := range []struct {
		q    Query
		m    MatchOptions
		want string
	}{
		{q, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b9"}}, "match: no events with host=b9 (found host=b1, b2, b3)"},
		{q, MatchOptions{Tag: "board", Ref: "b1", Others: []string{"b2"}}, "match: no events with board=b1 (none has the tag)"},
		{q, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, Window: -5}, "match: window -5ns: must be positive"},
		{q, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, Window: 10}, "match host=b1 vs host=b2: no pair of events within the window 10ns (9 and 9 events)"},
		{Query{Measurement: "pps_event"}, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}}, `no matching records: 38 records read, none of measurement "pps_event"`},
		{Query{Measurement: "gpio_event", Where: []Tag{{"edge", "rising"}, {"host", "b1"}}}, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}}, "match: no events with host=b2 (found host=b1)"},
		{q, MatchOptions{Tag: "host", Ref: "b1"}, "at least one other"},
	} {
		err := run(tc.q, tc.m)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
	// One reference event and no window: nothing to take a window from.
	c, _ := NewCollector(Query{Measurement: "e", TimeValue: true, GroupBy: []string{"host"}})
	c.ReadLineProtocol(strings.NewReader("e,host=a x=1i 100\ne,host=b x=1i 105\n"))
	evs, _ := c.Finish()
	if _, _, err := MatchSeries(evs, nil, MatchOptions{Tag: "host", Ref: "a", Others: []string{"b"}}); err == nil || !strings.Contains(err.Error(), "give --window") {
		t.Errorf("one event: %v", err)
	}
	if _, _, err := MatchSeries(evs, nil, MatchOptions{Tag: "host", Ref: "a", Others: []string{"b"}, Window: 10}); err != nil {
		t.Errorf("one event, window 10: %v", err)
	}
	if got := InfluxQL(Query{Measurement: "gpio_event", TimeValue: true, Where: rising}); got != `SELECT * FROM "gpio_event" WHERE "edge" = 'rising' GROUP BY *` {
		t.Errorf("InfluxQL: %s", got)
	}
}

// TestTrafficKnownRates: known bytes/s → known clients per server or master
// port, next to the study's.
func TestTrafficKnownRates(t *testing.T) {
	lp := "ntp_probe,host=b1,server=10.0.0.1:123 bytes_sent=900u,bytes_received=900u,bytes_per_s=40.0 1000000000\n" +
		"ntp_probe,host=b1,server=10.0.0.1:123 bytes_sent=1800u,bytes_received=1800u,bytes_per_s=22.5 9000000000\n" +
		"ntp_probe,host=b2,server=10.0.0.1:123 bytes_per_s=23i 9000000000\n" +
		"ptp_probe_stats,host=b1,master=10.0.0.2 bytes_sent_per_s=86.0,bytes_received_per_s=100.0,transport=\"udp4\" 2000000000\n" +
		"ptp_probe_stats,host=b1 bytes_sent_per_s=0.0,bytes_received_per_s=0.0 1000000000\n" +
		"monagent_source,source=ntp:10.0.0.1:123 collections=3u 9000000000\n"
	var out, errw bytes.Buffer
	if err := Run(context.Background(), Input{Paths: []string{writeLP(t, lp)}}, Query{}, RunOptions{Format: "json", Traffic: true}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var rows []TrafficRow
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	type row struct {
		proto, source, series string
		per                   float64
		c100, c1g             int64
	}
	want := []row{
		{"ntp", "measured", "host=b1,server=10.0.0.1:123", 22.5, 55555, 555555}, // 1.25e6 / 22.5
		{"ntp", "measured", "host=b2,server=10.0.0.1:123", 23, 54347, 543478},
		{"ptp", "measured", "host=b1", 0, 0, 0},
		{"ptp", "measured", "host=b1,master=10.0.0.2", 186, 6720, 67204},
		{"ntp", "study", "", 23, 54347, 543478}, // the study: ~54k and ~540k
		{"ptp", "study", "", 186, 6720, 67204},  // ~6.7k and ~67k
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d:\n%s", len(rows), len(want), out.String())
	}
	for i, w := range want {
		r := rows[i]
		var tags []string
		for _, k := range []string{"host", "master", "server"} {
			if v, ok := r.Series[k]; ok {
				tags = append(tags, k+"="+v)
			}
		}
		got := row{r.Protocol, r.Source, strings.Join(tags, ","), r.PerClientBPS, r.Clients100M, r.Clients1G}
		if got != w {
			t.Errorf("row %d = %+v, want %+v", i, got, w)
		}
	}
	if r := rows[3]; *r.SentBPS != 86 || *r.ReceivedBPS != 100 || r.Records != 1 || rows[0].Records != 2 || rows[5].FixedBPS != 180 {
		t.Errorf("ptp row %+v", r)
	}
	out.Reset()
	if err := Run(context.Background(), Input{Paths: []string{writeLP(t, lp)}}, Query{Where: []Tag{{"host", "b1"}}}, RunOptions{Traffic: true}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"B/s per client", "clients @10% of 100 Mb/s", "ntp       host=b1,server=10.0.0.1:123  2        -         -             22.5             55555", "186 + 180 fixed  6720"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "host=b2") {
		t.Errorf("--where host=b1 kept b2:\n%s", out.String())
	}
	err := Run(context.Background(), Input{Paths: []string{writeLP(t, "clock_offset offset_ns=1i 1\n")}}, Query{}, RunOptions{Traffic: true}, &out, &errw)
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "traffic: no matching records: no ntp_probe records with bytes_per_s nor ptp_probe_stats") {
		t.Errorf("no probes: %v", err)
	}
	if Clients(100e6, 0) != 0 || Clients(1e9, 12.5e6) != 1 {
		t.Error("Clients")
	}
}

// TestMatchAcrossInputs (issue 21 item 13): each board's events in its own
// input (two spools copied off the boards, no InfluxDB) pair as they do in
// one.
func TestMatchAcrossInputs(t *testing.T) {
	byHost := map[string]string{}
	for _, l := range strings.SplitAfter(twoBoards(), "\n") {
		for _, h := range []string{"b1", "b2", "b3"} {
			if strings.Contains(l, ",host="+h+",") {
				byHost[h] += l
			}
		}
	}
	m := MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, TimeField: "global_ns"}
	q := Query{Measurement: "gpio_event", Where: rising}
	var one, two, errw bytes.Buffer
	if err := Run(context.Background(), Input{Paths: []string{writeLP(t, twoBoards())}}, q, RunOptions{Format: "json", Match: &m}, &one, &errw); err != nil {
		t.Fatal(err)
	}
	in := Input{Paths: []string{writeLP(t, byHost["b1"]), writeLP(t, byHost["b2"])}}
	if err := Run(context.Background(), in, q, RunOptions{Format: "json", Match: &m}, &two, &errw); err != nil {
		t.Fatal(err)
	}
	if one.String() != two.String() || !strings.Contains(two.String(), `"pairs": 8`) {
		t.Errorf("one input:\n%s\ntwo:\n%s", one.String(), two.String())
	}
}
