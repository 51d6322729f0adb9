package hca

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// scripted is a Network that replays fixed exchanges.
type scripted struct {
	ex []Exchange
	i  int
}

func (s *scripted) Size() int { return 2 }

func (s *scripted) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if s.i >= len(s.ex) {
		return Exchange{}, fmt.Errorf("script exhausted after %d exchanges", s.i)
	}
	e := s.ex[s.i]
	s.i++
	e.From, e.To = from, to
	return e, nil
}

func TestSummarizeRTT(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []int64
		want rttSummary
	}{
		{"one", []int64{7}, rttSummary{Mean: 7, Min: 7, Kept: 1, MeanNS: 7}},
		{"clean", []int64{100, 110, 120, 130}, rttSummary{Mean: 115, Min: 100, Kept: 4, MeanNS: 115}},
		// p75 of five values is the fourth smallest; the cut is 1.5 × 100.
		{"at cut", []int64{100, 100, 100, 100, 150}, rttSummary{Mean: 110, Min: 100, Kept: 5, MeanNS: 110}},
		{"over cut", []int64{151, 100, 100, 100, 100}, rttSummary{Mean: 100, Min: 100, Kept: 4, Dropped: 1, MeanNS: 100}},
		{"tail", []int64{10, 10, 11, 10, 12, 10, 500, 10, 900, 10, 11, 10}, rttSummary{Mean: 10, Min: 10, Kept: 10, Dropped: 2, MeanNS: 10.4}},
		{"odd", []int64{101, 102}, rttSummary{Mean: 102, Min: 101, Kept: 2, MeanNS: 101.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]int64(nil), tc.in...)
			got, err := summarizeRTT(in)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatal("input modified")
				}
			}
		})
	}
	if _, err := summarizeRTT(nil); !errors.Is(err, errNoSamples) {
		t.Errorf("empty: %v", err)
	}
}

func TestRTTCacheMeasuresOnce(t *testing.T) {
	const lat = 5_000
	s := mustSim(t, SimConfig{Nodes: 3, Seed: 1, OffsetNS: 1e9, LatencyNS: lat})
	c := newRTTCache(3, 10)
	ctx := context.Background()
	r, err := c.Get(ctx, s, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Mean != 2*lat || r.Min != 2*lat || r.Kept != 10 {
		t.Errorf("rtt %+v, want mean=min=%d over 10", r, 2*lat)
	}
	if got := s.Stats().Exchanges; got != 13 {
		t.Errorf("first Get used %d exchanges, want 3 warm-up + 10", got)
	}
	for range 3 {
		r2, err := c.Get(ctx, s, 1, 0)
		if err != nil || r2 != r {
			t.Fatalf("cached Get = %+v, %v; want %+v", r2, err, r)
		}
	}
	if got := s.Stats().Exchanges; got != 13 {
		t.Errorf("cached Gets re-measured: %d exchanges", got)
	}
	if c.Best(1, 0) != 2*lat || c.Best(0, 1) != 0 {
		t.Errorf("best %d / %d", c.Best(1, 0), c.Best(0, 1))
	}
	// The first fitpoint already uses the measured RTT: on a symmetric
	// noiseless link it is exact, where RTT 0 would be off by the latency.
	fp, err := measureFitpointFine(ctx, s, 1, 0, float64(r.Mean), 5, MedianSample)
	if err != nil {
		t.Fatal(err)
	}
	if want := float64(s.TrueOffset(1, fp.X)); fp.Offset != want {
		t.Errorf("first fitpoint offset %g, want %g (error %g)", fp.Offset, want, fp.Offset-want)
	}
}

func TestMeasureFitpointIsMedianSample(t *testing.T) {
	// Samples Recv − Remote − rtt/2 with rtt 100: 950, 10, 30, 20, 1000;
	// the median, 30, is the third exchange's, at its Recv − rtt/2.
	var ex []Exchange
	for i, off := range []int64{1000, 60, 80, 70, 1050} {
		recv := int64(1_000_000 + 1000*i)
		ex = append(ex, Exchange{Send: recv - 100, Remote: recv - off, Recv: recv})
	}
	fp, err := measureFitpointFine(context.Background(), &scripted{ex: ex}, 1, 0, 100, len(ex), MedianSample)
	if err != nil {
		t.Fatal(err)
	}
	if want := (timebase.Point{X: 1_002_000 - 50, Offset: 30}); fp.X != want.X || fp.Offset != float64(want.Offset) {
		t.Errorf("fitpoint %+v, want the median sample %+v", fp, want)
	}
	if _, err := measureFitpointFine(context.Background(), &scripted{}, 1, 0, 100, 0, MedianSample); !errors.Is(err, errNoSamples) {
		t.Errorf("zero exchanges: %v", err)
	}
	if _, err := measureFitpointFine(context.Background(), &scripted{}, 1, 0, 100, 1, MedianSample); err == nil {
		t.Error("network error not returned")
	}
}

func linePoints(n int, slope float64, icept int64) []timebase.Point {
	pts := make([]timebase.Point, n)
	for i := range pts {
		x := int64(1_700_000_000_000_000_000) + int64(i)*100_000_000
		pts[i] = timebase.Point{X: x, Offset: icept + int64(math.Round(slope*float64(x-pts[0].X)))}
		if i == 0 {
			pts[i].Offset = icept
		}
	}
	return pts
}

func TestFitLine(t *testing.T) {
	for _, method := range []FitMethod{LeastSquares, TheilSen} {
		t.Run(method.String(), func(t *testing.T) {
			pts := linePoints(10, 80e-6, -123_456_789)
			m, err := fitLine(pts, method)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(m.Slope-80e-6) > 1e-11 {
				t.Errorf("slope %g, want 80e-6", m.Slope)
			}
			for _, p := range pts {
				if d := abs64(m.Offset(p.X) - p.Offset); d > 1 {
					t.Errorf("at %d: model %d, point %d", p.X, m.Offset(p.X), p.Offset)
				}
			}
			if m.N != 10 || m.ResidualNS > 1 {
				t.Errorf("N %d residual %g", m.N, m.ResidualNS)
			}
			_, err = fitLine(linePoints(10, 600e-6, 0), method)
			if !errors.Is(err, ErrAbsurdSlope) {
				t.Errorf("600 ppm: %v, want ErrAbsurdSlope", err)
			}
			if _, err := fitLine(linePoints(10, -499e-6, 0), method); err != nil {
				t.Errorf("-499 ppm rejected: %v", err)
			}
			if _, err := fitLine(pts[:1], method); !errors.Is(err, timebase.ErrTooFewPoints) {
				t.Errorf("one point: %v", err)
			}
			if _, err := fitLine([]timebase.Point{{X: 5, Offset: 1}, {X: 5, Offset: 2}}, method); !errors.Is(err, timebase.ErrTooFewPoints) {
				t.Errorf("one point: %v", err)
			}
		})
	}
	if _, err := fitLine(linePoints(maxTheilSenPoints+1, 0, 0), TheilSen); err == nil {
		t.Error("theil-sen accepted more than MaxTheilSenPoints")
	}
	if _, err := fitLine(linePoints(3, 0, 0), FitMethod(9)); err == nil {
		t.Error("unknown method accepted")
	}
}

func TestTheilSenResistsOutliers(t *testing.T) {
	pts := linePoints(12, 30e-6, 5000)
	pts[3].Offset += 40_000 // two delayed answers
	pts[8].Offset += 25_000
	ts, err := fitLine(pts, TheilSen)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := fitLine(pts, LeastSquares)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ts.Slope-30e-6) > 1e-9 {
		t.Errorf("theil-sen slope %g, want 30e-6", ts.Slope)
	}
	if math.Abs(ls.Slope-30e-6) < 1e-8 {
		t.Errorf("least squares was not disturbed (slope %g): the outliers are too weak for this test", ls.Slope)
	}
	if e := abs64(ts.Offset(pts[5].X) - (5000 + int64(math.Round(30e-6*float64(pts[5].X-pts[0].X))))); e > 2 {
		t.Errorf("theil-sen intercept off by %d ns", e)
	}
}

func TestSKaMPIEarlyStop(t *testing.T) {
	ctx := context.Background()
	cfg := skampiConfig{Min: 3, Max: 40}
	// Noiseless link: without a prior best RTT all Max ping-pongs run (the
	// first measurement establishes the best); with one, only Min.
	s := mustSim(t, SimConfig{Nodes: 2, Seed: 1, OffsetNS: 1e9, LatencyNS: 4_000})
	first, err := skampiOffset(ctx, s, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Exchanges != cfg.Max {
		t.Errorf("no prior: %d ping-pongs, want %d", first.Exchanges, cfg.Max)
	}
	cfg.BestRTT = first.MinRTT
	again, err := skampiOffset(ctx, s, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Exchanges != cfg.Min {
		t.Errorf("with prior best %d: %d ping-pongs, want %d", cfg.BestRTT, again.Exchanges, cfg.Min)
	}
	// A prior far better than this link can do: never within 1.1×, runs Max.
	cfg.BestRTT = first.MinRTT / 2
	slow, err := skampiOffset(ctx, s, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slow.Exchanges != cfg.Max {
		t.Errorf("unreachable best: %d ping-pongs, want %d", slow.Exchanges, cfg.Max)
	}

	// Jittery link: the stop fires somewhere between Min and Max.
	j := mustSim(t, SimConfig{Nodes: 2, Seed: 9, OffsetNS: 1e9, LatencyNS: 4_000, JitterNS: 1_000})
	cfg = skampiConfig{Min: 2, Max: 100}
	prior, err := skampiOffset(ctx, j, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for range 20 {
		cfg.BestRTT = prior.MinRTT
		est, err := skampiOffset(ctx, j, 1, 0, cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		total += est.Exchanges
	}
	t.Logf("jitter: %d ping-pongs in 20 early-stopping measurements (min %d, max %d each)", total, cfg.Min, cfg.Max)
	if total <= 20*cfg.Min || total >= 20*cfg.Max/2 {
		t.Errorf("jitter: %d ping-pongs in 20 measurements, want between %d and %d", total, 20*cfg.Min, 20*cfg.Max/2)
	}

	for _, bad := range []skampiConfig{{Min: 0, Max: 5}, {Min: 6, Max: 5}, {Min: 1, Max: 0}} {
		if _, err := skampiOffset(ctx, s, 1, 0, bad, nil); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

func TestOffsetEstimatesContainTruth(t *testing.T) {
	ctx := context.Background()
	s := mustSim(t, SimConfig{Nodes: 4, Seed: 11, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 4_000, JitterNS: 1_000, ProcessingNS: 500})
	for client := 1; client < 4; client++ {
		sk, err := skampiOffset(ctx, s, client, 0, skampiConfig{Min: 5, Max: 30}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mr, err := minRTTOffset(ctx, s, client, 0, 30)
		if err != nil {
			t.Fatal(err)
		}
		for name, est := range map[string]offsetEstimate{"skampi": sk, "min-rtt": mr} {
			truth := s.TrueOffset(client, est.At)
			if e := abs64(est.Offset - truth); e > est.HalfWidth+1 {
				t.Errorf("%s node %d: error %d outside half-width %d", name, client, e, est.HalfWidth)
			}
			// A symmetric link with 1 µs jitter: the best of 30 is close.
			if e := abs64(est.Offset - truth); e > 500 {
				t.Errorf("%s node %d: error %d ns, want < 500", name, client, e)
			}
		}
		if sk.HalfWidth > mr.HalfWidth {
			t.Errorf("node %d: intersected interval %d wider than the best single one %d", client, sk.HalfWidth, mr.HalfWidth)
		}
	}
}

func TestMinRTTOffsetPicksFastest(t *testing.T) {
	ex := []Exchange{
		{Send: 1000, Remote: 600, Recv: 1300},
		{Send: 2000, Remote: 1560, Recv: 2100}, // fastest: mid 2050, offset 490
		{Send: 3000, Remote: 2500, Recv: 3200},
	}
	est, err := minRTTOffset(context.Background(), &scripted{ex: ex}, 1, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := (offsetEstimate{At: 2050, Offset: 490, HalfWidth: 50, Exchanges: 3, MinRTT: 100}); est != want {
		t.Errorf("got %+v, want %+v", est, want)
	}
}

func TestSKaMPISlopeCompensation(t *testing.T) {
	// Noiseless link, clocks 150 ppm apart, 30 ping-pongs of 42 µs: the
	// offset moves by 190 ns during the measurement. Uncompensated, the
	// intersection's midpoint lies half of that from the truth at the last
	// ping-pong; carried along the known slope, it is exact.
	ctx := context.Background()
	s := mustSim(t, SimConfig{Nodes: 2, Drifts: []float64{0, 150e-6}, Offsets: []int64{0, 5e8}, LatencyNS: 20_000, ProcessingNS: 2_000, StartNS: 1e9})
	slope := 150e-6 / (1 + 150e-6) // d offset / d local time of node 1
	cfg := skampiConfig{Min: 30, Max: 30}
	plain, err := skampiOffset(ctx, s, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Slope = slope
	comp, err := skampiOffset(ctx, s, 1, 0, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ePlain := abs64(plain.Offset - s.TrueOffset(1, plain.At))
	eComp := abs64(comp.Offset - s.TrueOffset(1, comp.At))
	t.Logf("error without slope %d ns, with %d ns", ePlain, eComp)
	if ePlain < 80 || eComp > 2 {
		t.Errorf("error %d ns without the slope (want ≈ 95), %d ns with it (want ≤ 2)", ePlain, eComp)
	}
	if comp.HalfWidth < 20_990 || comp.HalfWidth > 21_010 {
		t.Errorf("half-width %d, want half the 42 µs RTT (42,006 ns on the fast clock)", comp.HalfWidth)
	}
}

func TestMeasureFitpointFine(t *testing.T) {
	// Jittered samples (µs apart): the median sample alone, with half an
	// odd RTT kept exact. Offsets Recv − Remote − 50.5: 949.5, 9.5, 29.5,
	// 19.5, 999.5.
	var ex []Exchange
	for i, off := range []int64{1000, 60, 80, 70, 1050} {
		recv := int64(1_000_000 + 1000*i)
		ex = append(ex, Exchange{Send: recv - 101, Remote: recv - off, Recv: recv})
	}
	fp, err := measureFitpointFine(context.Background(), &scripted{ex: ex}, 1, 0, 101, len(ex), MedianSample)
	if err != nil {
		t.Fatal(err)
	}
	// RefX is the median sample's reading by the reference.
	if want := (finePoint{X: 1_002_000 - 51, Offset: 29.5, RefX: 1_001_920}); fp != want {
		t.Errorf("fitpoint %+v, want the median sample %+v", fp, want)
	}
	// Samples within the clocks' 2 ns of the median are averaged: 10, 11,
	// 12 and 9 (not 40) give 10.5 at the mean of their local times.
	ex = ex[:0]
	for i, off := range []int64{60, 61, 62, 59, 90} {
		recv := int64(1_000_000 + 1000*i)
		ex = append(ex, Exchange{Send: recv - 100, Remote: recv - off, Recv: recv})
	}
	fp, err = measureFitpointFine(context.Background(), &scripted{ex: ex}, 1, 0, 100, len(ex), MedianSample)
	if err != nil {
		t.Fatal(err)
	}
	// The reference's mean reading, 1,001,439.5, is kept whole and fraction.
	if want := (finePoint{X: 1_001_500 - 50, Offset: 10.5, RefX: 1_001_440, RefFrac: -0.5}); fp != want {
		t.Errorf("fitpoint %+v, want %+v", fp, want)
	}
	// Mapped after the fact through the reference's model: a constant
	// 0.25 ns adds 0.25; slope 1e-3 and 7.25 ns at 1,001,000 add
	// 7.25 + 1e-3 × 439.5 = 7.6895 ns.
	for _, tc := range []struct {
		ref  fine
		want float64
	}{
		{fine{frac: 0.25}, 10.75},
		{fine{LinearModel: timebase.LinearModel{Origin: 1_001_000, Intercept: 7, Slope: 1e-3}, frac: 0.25}, 10.5 + 7.6895},
	} {
		got := mapPoints([]finePoint{fp}, tc.ref)[0]
		if math.Abs(got.Offset-tc.want) > 1e-9 || got.X != fp.X {
			t.Errorf("mapped through %+v: %+v, want offset %.4f", tc.ref, got, tc.want)
		}
	}
}

func TestFitFineKeepsFraction(t *testing.T) {
	// A line with a fractional intercept, sampled without rounding: both
	// methods recover it to well under a picosecond, where timebase.Fit
	// over rounded points is off by up to half a nanosecond.
	const slope, icept = 37.3e-6, 1234.375
	var pts []finePoint
	for i := range int64(30) {
		x := 5e9 + 2e9*i + 17*i*i
		pts = append(pts, finePoint{X: x, Offset: icept + slope*float64(x-5e9)})
	}
	for _, method := range []FitMethod{LeastSquares, TheilSen} {
		f, err := fitFine(pts, method)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []int64{5e9, 40e9, 100e9} {
			want := icept + slope*float64(x-5e9)
			if d := math.Abs(f.offsetAt(x) - want); d > 1e-3 {
				t.Errorf("%v: line at %d off by %.4f ns", method, x, d)
			}
			// The rounded model keeps that to within its output rounding
			// (its origin moved to where the line is a whole ns).
			m := f.model()
			line := float64(m.Intercept) + m.Slope*float64(x-m.Origin)
			if d := math.Abs(line - want); d > slope {
				t.Errorf("%v: model %+v at %d off by %.4f ns", method, m, x, d)
			}
		}
		if f.N != 30 || f.ResidualNS > 1e-6 {
			t.Errorf("%v: stats %+v", method, f.LinearModel)
		}
	}
	if _, err := fitFine(pts[:1], LeastSquares); !errors.Is(err, timebase.ErrTooFewPoints) {
		t.Errorf("one point: %v", err)
	}
	steep := []finePoint{{X: 0, Offset: 0}, {X: 1e9, Offset: 6e5}}
	if _, err := fitFine(steep, LeastSquares); !errors.Is(err, ErrAbsurdSlope) {
		t.Errorf("600 ppm: %v", err)
	}
}

func TestMergeFineExactAtDepth(t *testing.T) {
	// A chain of 12 models (depth log2 4096) with fractional intercepts:
	// the merged model must equal composing the offsets step by step, to
	// well under a nanosecond, at the chain's origin and 100 s away.
	// timebase.Merge rounds the intercept at every level.
	var chain []fine
	for i := range int64(12) {
		f := fine{LinearModel: timebase.LinearModel{
			Origin:    1e9 + 7e8*i,
			Intercept: 3e8 - 5e7*i,
			Slope:     float64(i%5-2) * 41.7e-6,
		}, frac: 0.1 + 0.07*float64(i)}
		chain = append(chain, f.normalise())
	}
	// chain[0] is 1 relative to 0, chain[i] is i+1 relative to i: merge
	// from the leaf up.
	merged, rough := chain[11], chain[11].LinearModel
	for i := 10; i >= 0; i-- {
		merged = mergeFine(chain[i], merged)
		rough = timebase.Merge(chain[i].LinearModel, rough)
	}
	for _, x := range []int64{chain[11].Origin, chain[11].Origin + 100e9} {
		// Compose: the offset of 12 from 0 at 12's time x is the sum of
		// each link's offset at the time of its lower node.
		var total float64
		local := float64(x)
		for i := 11; i >= 0; i-- {
			c := chain[i]
			off := float64(c.Intercept) + c.frac + c.Slope*(local-float64(c.Origin))
			total += off
			local -= off
		}
		if d := math.Abs(merged.offsetAt(x) - total); d > 1e-3 {
			t.Errorf("merged at %d off by %.4f ns", x, d)
		}
		m := merged.model()
		line := float64(m.Intercept) + m.Slope*float64(x-m.Origin)
		if d := math.Abs(line - total); d > 1e-3 {
			t.Errorf("merged model at %d off by %.4f ns", x, d)
		}
		rl := float64(rough.Intercept) + rough.Slope*float64(x-rough.Origin)
		t.Logf("at %d: fine merge off by %.2g ns, timebase.Merge (rounding each level, fraction dropped) by %.2f ns", x, merged.offsetAt(x)-total, rl-total)
	}
}

// fitLine is fitFine over whole-nanosecond fitpoints, its model rounded: a
// line through them, rejected with ErrAbsurdSlope if |slope| > maxSlope. The
// model's N, MeanX, ResidualNS and SlopeErr carry its uncertainty; for
// Theil–Sen they are the least-squares formulas applied to the robust line's
// residuals, an approximation.
func fitLine(points []timebase.Point, method FitMethod) (timebase.LinearModel, error) {
	fp := make([]finePoint, len(points))
	for i, p := range points {
		fp[i] = finePoint{X: p.X, Offset: float64(p.Offset)}
	}
	f, err := fitFine(fp, method)
	if err != nil {
		return timebase.LinearModel{}, err
	}
	return f.model(), nil
}
