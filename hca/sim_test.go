package hca

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/monagent/monagent/timebase"
)

func mustSim(t *testing.T, cfg SimConfig) *simNetwork {
	t.Helper()
	s, err := newSimNetwork(cfg)
	if err != nil {
		t.Fatalf("NewSim: %v", err)
	}
	return s
}

func mustExchange(t *testing.T, n Network, from, to int) Exchange {
	t.Helper()
	e, err := n.Exchange(context.Background(), from, to)
	if err != nil {
		t.Fatalf("exchange %d->%d: %v", from, to, err)
	}
	return e
}

func TestSimNoiselessExactOffsets(t *testing.T) {
	s := mustSim(t, SimConfig{Nodes: 5, Seed: 1, OffsetNS: 1e9, StartNS: 123_456_789})
	for from := range 5 {
		for to := range 5 {
			if from == to {
				continue
			}
			e := mustExchange(t, s, from, to)
			if e.Send != e.Recv || e.rtt() != 0 {
				t.Errorf("%d->%d: zero latency gave RTT %d", from, to, e.rtt())
			}
			want := s.ClockOffset(from) - s.ClockOffset(to)
			if got := e.Send - e.Remote; got != want {
				t.Errorf("%d->%d: offset %d, want %d", from, to, got, want)
			}
			if from != 0 && to == 0 {
				if got := s.TrueOffset(from, e.Send); got != want {
					t.Errorf("TrueOffset(%d) = %d, want %d", from, got, want)
				}
			}
		}
	}
	if s.Elapsed() != 0 {
		t.Errorf("zero-latency exchanges advanced time by %d", s.Elapsed())
	}
	if st := s.Stats(); st.Exchanges != 20 || st.Messages != 40 || st.Lost != 0 {
		t.Errorf("stats %+v, want 20 exchanges, 40 messages", st)
	}
}

func TestSimMidpointBias(t *testing.T) {
	const lat, proc = 20_000, 3_000
	for _, tc := range []struct {
		name     string
		asym     int64
		from, to int
		wantBias int64 // (midpoint − Remote) − true offset
	}{
		{"symmetric", 0, 0, 1, 0},
		{"symmetric reverse", 0, 1, 0, 0},
		{"slow up", 600, 0, 1, -300},
		{"slow up reverse", 600, 1, 0, 300},
		{"slow down", -800, 0, 1, 400},
		{"slow down reverse", -800, 1, 0, -400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSim(t, SimConfig{Nodes: 2, Seed: 2, OffsetNS: 5e8, LatencyNS: lat, ProcessingNS: proc, AsymmetryNS: tc.asym})
			e := mustExchange(t, s, tc.from, tc.to)
			if want := 2*lat + proc + abs64(tc.asym); e.rtt() != want {
				t.Errorf("RTT %d, want %d", e.rtt(), want)
			}
			mid := e.Send + e.rtt()/2
			truth := s.ClockOffset(tc.from) - s.ClockOffset(tc.to)
			if bias := mid - e.Remote - truth; bias != tc.wantBias {
				t.Errorf("midpoint bias %d, want %d", bias, tc.wantBias)
			}
		})
	}
}

func TestSimLossRateAndTimeouts(t *testing.T) {
	const n, loss, timeout = 20_000, 0.1, 1_000_000
	s := mustSim(t, SimConfig{Nodes: 3, Seed: 3, RootIsBase: true, LatencyNS: 10_000, JitterNS: 1_000, Loss: loss, TimeoutNS: timeout})
	var lost, rttSum int64
	for i := range n {
		e, err := s.Exchange(context.Background(), 0, 1+i%2)
		switch {
		case errors.Is(err, ErrLost):
			lost++
		case err != nil:
			t.Fatalf("exchange %d: %v", i, err)
		default:
			rttSum += e.rtt()
		}
	}
	rate := float64(lost) / n
	// Binomial standard deviation is sqrt(0.09/20000) = 0.0021; allow ~5σ.
	if math.Abs(rate-loss) > 0.01 {
		t.Errorf("loss rate %.4f, want %.2f ± 0.01", rate, loss)
	}
	// The root is the base clock, so its RTTs are base durations exactly.
	if want := rttSum + lost*timeout; s.Elapsed() != want {
		t.Errorf("elapsed %d, want RTTs + timeouts = %d", s.Elapsed(), want)
	}
	st := s.Stats()
	if st.Lost != lost || st.Exchanges != n || st.Messages < 2*(n-lost)+lost || st.Messages > 2*n {
		t.Errorf("stats %+v inconsistent with %d lost of %d", st, lost, n)
	}
}

func TestSimDeterministic(t *testing.T) {
	cfg := SimConfig{Nodes: 8, Seed: 42, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 5_000, JitterNS: 1_000, AsymmetryNS: 200, Loss: 0.05, DelayProb: 0.05, DelayMinNS: 50_000, DelayMaxNS: 500_000}
	run := func(cfg SimConfig) []Exchange {
		s := mustSim(t, cfg)
		var out []Exchange
		for i := range 200 {
			e, err := s.Exchange(context.Background(), i%8, (i*3+1)%8)
			if err != nil && !errors.Is(err, ErrLost) {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		return out
	}
	a, b := run(cfg), run(cfg)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("exchange %d differs between equal seeds: %+v vs %+v", i, a[i], b[i])
		}
	}
	cfg.Seed = 43
	c := run(cfg)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Error("a different seed gave the same exchanges")
	}
}

func TestSimTrueOffsetTracksDrift(t *testing.T) {
	s := mustSim(t, SimConfig{Nodes: 4, Seed: 5, DriftPPM: 100, OffsetNS: 1e9, StartNS: 1_000_000_000})
	for i := 1; i < 4; i++ {
		if d := s.Drift(i); d == 0 || math.Abs(d) > 100e-6 {
			t.Fatalf("drift of node %d is %g, want nonzero within ±100 ppm", i, d)
		}
	}
	check := func() {
		t.Helper()
		base := s.Elapsed() + 1_000_000_000
		for i := 1; i < 4; i++ {
			local := s.clock(i, base)
			want := local - s.clock(0, base)
			if got := s.TrueOffset(i, local); abs64(got-want) > 1 {
				t.Errorf("node %d at base %d: TrueOffset %d, clocks differ by %d", i, base, got, want)
			}
		}
	}
	check()
	before := make([]int64, 4)
	for i := 1; i < 4; i++ {
		before[i] = s.TrueOffset(i, s.Now(i))
	}
	const dt = 10_000_000_000
	s.Advance(dt)
	check()
	for i := 1; i < 4; i++ {
		grew := s.TrueOffset(i, s.Now(i)) - before[i]
		// Over dt of base time the offset local − root changes by (d_i − d_0)·dt.
		want := (s.Drift(i) - s.Drift(0)) * dt
		if math.Abs(float64(grew)-want) > 2 {
			t.Errorf("node %d: offset moved %d ns in 10 s, want %.0f", i, grew, want)
		}
	}
}

func TestSimModelError(t *testing.T) {
	s := mustSim(t, SimConfig{Nodes: 2, Seed: 6, DriftPPM: 100, OffsetNS: 1e9})
	x0 := s.Now(1)
	x1 := x0 + 10_000_000_000
	y0, y1 := s.TrueOffset(1, x0), s.TrueOffset(1, x1)
	exact := timebase.LinearModel{Origin: x0, Intercept: y0, Slope: float64(y1-y0) / float64(x1-x0)}
	if e := s.ModelError(1, exact, x0, x1, 1_000_000_000); e > 1 {
		t.Errorf("exact model has error %d ns", e)
	}
	shifted := exact
	shifted.Intercept += 5
	if e := s.ModelError(1, shifted, x0, x1, 1_000_000_000); e < 4 || e > 6 {
		t.Errorf("model off by 5 ns measured as %d", e)
	}
	offsetOnly := timebase.LinearModel{Origin: x0, Intercept: y0}
	want := abs64(y1 - y0)
	if e := s.ModelError(1, offsetOnly, x0, x1, 3_000_000_000); abs64(e-want) > 1 {
		t.Errorf("offset-only model error %d, want drift over 10 s = %d", e, want)
	}
}

func TestSimBadInput(t *testing.T) {
	for _, cfg := range []SimConfig{
		{Nodes: 0},
		{Nodes: 2, Loss: 1},
		{Nodes: 2, Loss: math.NaN()},
		{Nodes: 2, DriftPPM: math.NaN()},
		{Nodes: 2, DriftPPM: MaxDriftPPM + 1},
		{Nodes: 2, DelayProb: math.NaN()},
		{Nodes: 2, JitterNS: -1},
		{Nodes: 2, Drifts: []float64{0}},
		{Nodes: 2, Drifts: []float64{0, 2e-3}},
		{Nodes: 2, DelayMinNS: 10, DelayMaxNS: 5},
		{Nodes: 2, OffsetNS: SimHorizonNS + 1},
		{Nodes: 2, LatencyNS: SimHorizonNS + 1},
		{Nodes: 2, AsymmetryNS: -SimHorizonNS - 1},
		{Nodes: 2, StartNS: SimHorizonNS + 1},
	} {
		if _, err := newSimNetwork(cfg); err == nil {
			t.Errorf("NewSim(%+v) accepted", cfg)
		}
	}
	s := mustSim(t, SimConfig{Nodes: 2})
	for _, pair := range [][2]int{{0, 0}, {0, 2}, {-1, 0}} {
		if _, err := s.Exchange(context.Background(), pair[0], pair[1]); err == nil {
			t.Errorf("exchange %v accepted", pair)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Exchange(ctx, 0, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestSimScale(t *testing.T) {
	const p = 1024
	s := mustSim(t, SimConfig{Nodes: p, Seed: 7, DriftPPM: 100, OffsetNS: 1e9, LatencyNS: 5_000, JitterNS: 1_000})
	for round := range 20 {
		for i := 1; i < p; i++ {
			mustExchange(t, s, i, (i+round)%i)
		}
	}
	if st := s.Stats(); st.Exchanges != 20*(p-1) {
		t.Errorf("exchanges %d", st.Exchanges)
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
