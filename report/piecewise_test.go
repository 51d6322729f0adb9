package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// Local clocks beyond 2^53 ns (about 104 days of uptime), where float64
// would lose nanoseconds.
const (
	x1 = 20_000_000_000_000_000         // b1's HCA clock at its first model's anchor
	x2 = x1 + 3_000_000_000 - 5_000_000 // b2's, 3 s ahead
)

// Two models per host, 10 s apart, with known slopes and intercepts: b1's
// frequency changes between them, b2 is 3 s ahead of rank 0 and slows.
var (
	m1a = timebase.LinearModel{Origin: x1 - 1_000_000, Intercept: 5000, Slope: 2e-6, N: 10, MeanX: x1, ResidualNS: 20, SlopeErr: 1e-9, FloorNS: 50}
	m1b = timebase.LinearModel{Origin: x1 + 10_000_000_000, Intercept: 25_123, Slope: 4.5e-6, N: 12, MeanX: x1 + 10_000_000_000, ResidualNS: 30, SlopeErr: 2e-9, FloorNS: 50}
	m2a = timebase.LinearModel{Origin: x2, Intercept: 3_000_012_000, Slope: -1.25e-6, N: 8, MeanX: x2 + 2_000_000, ResidualNS: 15.5, SlopeErr: 3e-9, FloorNS: 40}
	m2b = timebase.LinearModel{Origin: x2 + 10_000_000_000, Intercept: 3_000_001_000, Slope: -0.75e-6, N: 8, MeanX: x2 + 10_000_000_000, ResidualNS: 12, SlopeErr: 1e-9, FloorNS: 40}
)

func modelLP(host, rank string, round int, m timebase.LinearModel, t int64) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	return fmt.Sprintf("hca_model,algorithm=hca3,host=%s,rank=%s round=%di,slope=%s,intercept_ns=%di,origin_ns=%di,slope_err=%s,residual_ns=%s,points=%di,mean_x_ns=%di,floor_ns=%di,bound_ns=99i %d\n",
		host, rank, round, f(m.Slope), m.Intercept, m.Origin, f(m.SlopeErr), f(m.ResidualNS), m.N, m.MeanX, m.FloorNS, t)
}

// piecewiseInput: the driver b0 (hca_sync; its copies of ranks 1 and 2's
// models are wrong on purpose: they must not be used), b1 (rank 1) and b2
// (rank 2) with two models each, and one rising edge a second, k = 0..9
// between the models, k = 11 after both hosts' last anchors. b0's events
// are on the global timeline itself. b2 has one event without
// hca_local_ns; b3 shipped no models. global_ns is recorded wrong (0):
// piecewise placement must not read it.
func piecewiseInput() (lp string, local map[string][]int64) {
	var b strings.Builder
	b.WriteString("hca_sync,algorithm=hca3,host=b0 round=1i,nodes=3i 1000\n")
	b.WriteString(modelLP("b0", "1", 1, timebase.LinearModel{Intercept: 999, MeanX: x1}, 1000))
	b.WriteString(modelLP("b0", "2", 1, timebase.LinearModel{Intercept: 999, MeanX: x2}, 1000))
	b.WriteString(modelLP("b1", "1", 1, m1a, 1001))
	b.WriteString(modelLP("b2", "2", 1, m2a, 1002))
	b.WriteString(modelLP("b1", "1", 2, m1b, 2001))
	b.WriteString(modelLP("b2", "2", 2, m2b, 2002))
	local = map[string][]int64{}
	g0 := int64(x1 - 5000 + 500_000) // global time of edge 0
	for _, k := range []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11} {
		g := g0 + k*1_000_000_000
		xs := map[string]int64{"b0": g, "b1": g + 5000 + 2*k*1000, "b2": g + 3_000_000_000 + 12_000 - k*1000, "b3": g + 77}
		for _, h := range []string{"b0", "b1", "b2", "b3"} {
			local[h] = append(local[h], xs[h])
			fmt.Fprintf(&b, "gpio_event,edge=rising,host=%s hca_local_ns=%di,global_ns=0i,global_bound_ns=1i %d\n", h, xs[h], 1_000_000+k*1000)
		}
	}
	b.WriteString("gpio_event,edge=rising,host=b2 global_ns=5i 1000500\n")
	return b.String(), local
}

// TestPiecewiseKnownPlacement: every event placed exactly as hca.Interpolate
// places it between its host's two models, the offsets matched from those
// placements, the bounds Interpolate's, the driver's clock the global
// timeline, the driver's copies of the models unused.
func TestPiecewiseKnownPlacement(t *testing.T) {
	lp, local := piecewiseInput()
	place := func(a, b timebase.LinearModel, x int64) (int64, int64) {
		off, bnd := hca.Interpolate(a, b, x)
		return x - off, bnd
	}
	var want, wantBound []int64
	for i := range local["b1"] {
		g1, b1 := place(m1a, m1b, local["b1"][i])
		g2, b2 := place(m2a, m2b, local["b2"][i])
		want = append(want, g2-(g1+700)) // Δ_ISR 700 ns
		wantBound = append(wantBound, b1+b2)
	}
	// the last edge is after both hosts' last anchors: the later model alone
	last := len(local["b1"]) - 1
	if g, _ := place(m1a, m1b, local["b1"][last]); g != local["b1"][last]-m1b.Offset(local["b1"][last]) {
		t.Fatalf("after the last anchor: %d", g)
	}
	// between the anchors the blend differs from either model alone
	if g, _ := place(m1a, m1b, local["b1"][5]); g == local["b1"][5]-m1a.Offset(local["b1"][5]) || g == local["b1"][5]-m1b.Offset(local["b1"][5]) {
		t.Fatal("the test's models do not tell the blend from a single model")
	}

	in := Input{Paths: []string{writeLP(t, lp)}}
	q := Query{Measurement: "gpio_event", Where: rising, TimeValue: false}
	o := MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, TimeField: "global_ns", DeltaISR: 700, Piecewise: true}
	var errw bytes.Buffer
	evs, bounds, per, err := readPiecewise(context.Background(), in, Query{Measurement: "gpio_event", Where: rising, Field: "global_ns", GroupBy: []string{"host"}}, o, &errw)
	if err != nil {
		t.Fatal(err)
	}
	ss, infos, err := MatchSeries(evs, bounds, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || !slices.Equal(ss[0].X, want) {
		t.Fatalf("offsets\n %v\nwant\n %v", ss[0].X, want)
	}
	mi := infos[0]
	var sum, mx int64
	for _, b := range wantBound {
		sum, mx = sum+b, max(mx, b)
	}
	if mi.Pairs != 11 || mi.BoundPairs != 11 || *mi.BoundMaxNS != mx || *mi.BoundMeanNS != float64(sum)/11 {
		t.Errorf("info %+v (bound max %d, sum %d)", *mi, mx, sum)
	}
	if p := per["b2"]; p.total != 12 || p.placed != 11 || p.noLocal != 1 || p.noModel != 0 || p.outside != 1 || p.describeHosts() != "host=b2: rank 2: 2 models" {
		t.Errorf("b2 placement %+v %s", *p, p.describeHosts())
	}

	// Through Run, JSON: the same offsets' statistics and the counts.
	var out bytes.Buffer
	errw.Reset()
	if err := Run(context.Background(), in, q, RunOptions{Format: "json", Match: &o}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	var got []Result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	g := got[0]
	maxAbs := int64(0)
	for _, w := range want {
		maxAbs = max(maxAbs, w, -w)
	}
	gm := g.Match
	if len(got) != 1 || g.N != 11 || g.MaxAbsNS != uint64(maxAbs) || gm == nil || gm.Placement != "piecewise" || *gm.EventsNoModel != 0 || *gm.EventsNoLocal != 1 ||
		*gm.EventsOutside != 2 || gm.BoundField != "piecewise_bound_ns" || *gm.BoundMaxNS != mx || gm.TimeField != "global_ns" ||
		gm.PlacedRef != "host=b1: rank 1: 2 models" || gm.PlacedOth != "host=b2: rank 2: 2 models" {
		t.Errorf("json %+v\nmatch %+v", g, gm)
	}
	if !strings.Contains(out.String(), `"placement": "piecewise"`) || !strings.Contains(out.String(), `"events_no_model": 0`) {
		t.Errorf("json:\n%s", out.String())
	}

	// The driver: its local time is the global time, bound 0.
	o.Ref, o.Others = "b0", []string{"b1"}
	evs, bounds, _, err = readPiecewise(context.Background(), in, Query{Measurement: "gpio_event", Where: rising, Field: "global_ns", GroupBy: []string{"host"}}, o, &errw)
	if err != nil {
		t.Fatal(err)
	}
	ss, infos, err = MatchSeries(evs, bounds, o)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range local["b0"] {
		g1, _ := place(m1a, m1b, local["b1"][i])
		if ss[0].X[i] != g1-(x+700) {
			t.Errorf("driver pair %d: %d, want %d", i, ss[0].X[i], g1-(x+700))
		}
	}
	if infos[0].Pairs != 11 || infos[0].BoundPairs != 11 {
		t.Errorf("driver info %+v", *infos[0])
	}
	out.Reset()
	if err := Run(context.Background(), in, q, RunOptions{Format: "text", Match: &o}, &out, &errw); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "times placed piecewise between hca_model records (hca.Interpolate): host=b0: rank 0 (the global timeline); host=b1: rank 1: 2 models; skipped 0 events without a model, 0 without hca_local_ns; 1 placed outside") {
		t.Errorf("text:\n%s", out.String())
	}
}

// TestPiecewiseBadInput: a host without models, no hca_local_ns at all, the
// wrong time field: one clear error each.
func TestPiecewiseBadInput(t *testing.T) {
	lp, _ := piecewiseInput()
	in := Input{Paths: []string{writeLP(t, lp)}}
	q := Query{Measurement: "gpio_event", Where: rising}
	for _, tc := range []struct {
		lp   string
		m    MatchOptions
		want string
	}{
		{lp, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b3"}, TimeField: "global_ns", Piecewise: true},
			"match --piecewise: no event with host=b3 could be placed: 11 of 11 without a model (host=b3: no hca_model records, nor hca_sync of rank 0), 0 without hca_local_ns"},
		{lp, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, Piecewise: true}, `the time field must be global_ns, not ""`},
		{lp, MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b9"}, TimeField: "global_ns", Piecewise: true}, "match: no events with host=b9 (found host=b0, b1, b2)"},
		{"gpio_event,edge=rising,host=b1 global_ns=1i 1\ngpio_event,edge=rising,host=b2 global_ns=1i 1\n",
			MatchOptions{Tag: "host", Ref: "b1", Others: []string{"b2"}, TimeField: "global_ns", Piecewise: true},
			"match --piecewise: no event with host=b1 could be placed: 0 of 1 without a model, 1 without hca_local_ns"},
	} {
		var out, errw bytes.Buffer
		i := in
		if tc.lp != lp {
			i = Input{Paths: []string{writeLP(t, tc.lp)}}
		}
		err := Run(context.Background(), i, q, RunOptions{Match: &tc.m}, &out, &errw)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.m, err, tc.want)
		}
	}
}
