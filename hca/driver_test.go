package hca

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/timebase"
)

// TestDriver runs a driver over three endpoints on loopback: while rank 2
// does not serve, every round fails naming it and keeps its number; once
// it serves, rounds succeed, are numbered on, and every rank takes its
// model; a rank that stops acknowledging is undelivered; Serve returns
// the context's error and reports nothing after.
func TestDriver(t *testing.T) {
	models := make(chan taken, 16)
	var block atomic.Bool // rank 2 stops acknowledging while set
	release := make(chan struct{})
	eps := modelMesh(t, models, func(rank int) {
		if rank == 2 && block.Load() {
			<-release
		}
	})
	serve(t, eps[1])

	rounds := make(chan Round, 64)
	p := DefaultParams()
	p.Fitpoints, p.Exchanges, p.SpacingNS, p.MaxPingPongs, p.MinPingPongs = 3, 3, 2_000_000, 5, 2
	d, err := newDriver(driverConfig{Endpoint: eps[0], Ranks: 3, Algorithm: hca3{}, Params: p,
		Resync: 20 * time.Millisecond, MaxBound: time.Second, RetryAfter: 10 * time.Millisecond,
		OnRound: func(r Round) { rounds <- r }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx) }()
	next := func() Round {
		t.Helper()
		select {
		case r := <-rounds:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no round within 10 s")
			return Round{}
		}
	}
	// good is the next round that made its models (a slow machine may
	// lose a round's exchanges): round number.
	good := func(number int64) Round {
		t.Helper()
		for {
			r := next()
			if r.Number != number {
				t.Fatalf("round %d (%v), want round %d", r.Number, r.Err, number)
			}
			if r.Err == nil {
				return r
			}
			t.Logf("round %d: %v", r.Number, r.Err)
		}
	}

	for range 2 {
		r := next()
		var na *NoAnswerError
		if !errors.As(r.Err, &na) || na.Rank != 2 || !errors.Is(r.Err, ErrLost) || r.Number != 1 {
			t.Fatalf("round with rank 2 not serving: number %d, %v; want round 1 failing with rank 2's NoAnswerError", r.Number, r.Err)
		}
	}
	stop2 := serving(eps[2], t)
	r := good(1) // after the failures of rounds under way when rank 2 started
	if len(r.Result.Models) != 3 || len(r.Undelivered) != 0 || r.DeliveryErr != nil || r.Realtime <= 0 {
		t.Fatalf("first good round: %+v", r)
	}
	var maxBound int64
	for rank := 1; rank < 3; rank++ {
		maxBound = max(maxBound, Bound(r.Result.Models[rank], r.RankClock(rank)))
	}
	if r.MaxBound != maxBound || maxBound <= 0 {
		t.Errorf("MaxBound %d, want %d, the largest bound at the ranks' clocks", r.MaxBound, maxBound)
	}
	for range 2 {
		m := <-models // delivered before OnRound ran
		if m.round != 1 || m.m != r.Result.Models[m.rank] {
			t.Errorf("rank %d took %+v of round %d, want round 1's %+v", m.rank, m.m, m.round, r.Result.Models[m.rank])
		}
	}
	good(2)
	<-models
	<-models

	// Rank 2's Serve hangs in its OnModel: its model goes unacknowledged,
	// and the next round finds it not answering.
	block.Store(true)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	r = good(3)
	if len(r.Undelivered) != 1 || r.Undelivered[0] != 2 || !errors.Is(r.DeliveryErr, ErrLost) {
		t.Fatalf("round with rank 2 not acknowledging: undelivered %v, %v", r.Undelivered, r.DeliveryErr)
	}
	var na *NoAnswerError
	if r = next(); !errors.As(r.Err, &na) || na.Rank != 2 || r.Number != 4 {
		t.Errorf("round after rank 2 hung: number %d, %v; want round 4 failing with rank 2's NoAnswerError", r.Number, r.Err)
	}
	unblock()

	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s of its context ending")
	}
	stop2()
	for len(rounds) > 0 {
		if r := <-rounds; r.Err != nil && errors.Is(r.Err, context.Canceled) {
			t.Errorf("a round failed by the context's end was reported: %v", r.Err)
		}
	}
}

func TestNewDriverErrors(t *testing.T) {
	ep := newEndpoint(t, 0, testKey, nil, 0)
	good := driverConfig{Endpoint: ep, Ranks: 2, Algorithm: hca{}, Params: DefaultParams(),
		Resync: time.Minute, MaxBound: time.Millisecond, RetryAfter: time.Second, OnRound: func(Round) {}}
	if _, err := newDriver(good); err != nil {
		t.Fatalf("newDriver: %v", err)
	}
	for name, change := range map[string]func(*driverConfig){
		"no algorithm": func(c *driverConfig) { c.Algorithm = nil },
		"no OnRound":   func(c *driverConfig) { c.OnRound = nil },
		"no resync":    func(c *driverConfig) { c.Resync = 0 },
		"no retry":     func(c *driverConfig) { c.RetryAfter = -time.Second },
		"no ranks":     func(c *driverConfig) { c.Ranks = 0 },
	} {
		c := good
		change(&c)
		if _, err := newDriver(c); err == nil {
			t.Errorf("%s: newDriver succeeded", name)
		}
	}
}

// TestDriverUntilResync: the next round is due after Resync, or when a
// model's bound would pass MaxBound, but not before RetryAfter.
func TestDriverUntilResync(t *testing.T) {
	const now = int64(1e12)
	ep := newEndpoint(t, 0, testKey, func() int64 { return now }, 0)
	d := &driver{cfg: driverConfig{Endpoint: ep, Resync: time.Minute, MaxBound: 50 * time.Microsecond, RetryAfter: time.Second}}
	// A model fitted at its rank's now, its bound growing 1 µs per second
	// from a floor: it passes 50 µs after about 50 s − floor.
	grows := func(floor int64) timebase.LinearModel {
		return timebase.LinearModel{N: 10, MeanX: now + 5_000, Intercept: 5_000, SlopeErr: 1e-6, FloorNS: floor}
	}
	for _, tc := range []struct {
		name     string
		models   []timebase.LinearModel
		min, max time.Duration
	}{
		{"steady", []timebase.LinearModel{{}, {N: 10, FloorNS: 1_000}}, time.Minute, time.Minute},
		{"growing", []timebase.LinearModel{{}, grows(0), grows(20_000)}, 30 * time.Second, 31*time.Second + time.Minute/64},
		{"at once", []timebase.LinearModel{{}, grows(49_990)}, time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := d.untilResync(tc.models); got < tc.min || got > tc.max {
				t.Errorf("untilResync %v, want %v..%v", got, tc.min, tc.max)
			}
		})
	}
}

func TestFailureKind(t *testing.T) {
	other := errors.New("hca: something else at 12 ns")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("x: %w", &NoAnswerError{Rank: 3, Err: fmt.Errorf("seq 17: %w", ErrLost)}), "rank 3 does not answer (down, another key, or another peer list)"},
		{fmt.Errorf("pair 1->2 seq 9: %w", ErrLost), "exchanges lost during the round (a rank stopped answering)"},
		{fmt.Errorf("rank 1: %w", ErrScattered), "line fits rejected on every try (a clock stepped or a rank is overloaded)"},
		{fmt.Errorf("rank 1: %w", ErrAbsurdSlope), "line fits rejected on every try (a clock stepped or a rank is overloaded)"},
		{&NoAnswerError{Rank: 3, Err: ErrLost, Others: []int{8}}, "rank 3 does not answer (down, another key, or another peer list), nor does rank 8"},
		{&NoAnswerError{Rank: 1, Err: ErrLost, Others: []int{2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13}},
			"rank 1 does not answer (down, another key, or another peer list), nor do ranks 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 2 more"},
		{other, other.Error()},
	} {
		if got := FailureKind(tc.err); got != tc.want {
			t.Errorf("FailureKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	err := &NoAnswerError{Rank: 1, Err: ErrLost}
	if want := "rank 1 does not answer (down, another key, or another peer list): hca: exchange lost"; err.Error() != want {
		t.Errorf("NoAnswerError %q, want %q", err.Error(), want)
	}
}

// rootStreaks is a Network that keeps, for each rank, the longest run of
// consecutive lost exchanges from the root to it: the driver's pre-round
// pings and model deliveries (the algorithms' exchanges run from the
// client to its reference, never from rank 0).
type rootStreaks struct {
	*simNetwork
	mu        sync.Mutex
	run, most []int
}

func (r *rootStreaks) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	e, err := r.simNetwork.Exchange(ctx, from, to)
	if from == 0 {
		r.mu.Lock()
		if errors.Is(err, ErrLost) {
			r.run[to]++
			r.most[to] = max(r.most[to], r.run[to])
		} else {
			r.run[to] = 0
		}
		r.mu.Unlock()
	}
	return e, err
}

// TestDriverRoundsAtTenPercentLoss: an agent's round (the driver's
// pre-round check, HCA with default parameters and no KeepGoing, the
// models' delivery) over the simulator at 10 % loss fails no round and
// delivers every model: 1,024 ranks over 3 seeds (256 ranks over 10 under
// the race detector and on 32-bit ARM). The test counts the ranks whose root exchanges were
// lost three times or more in a row: before, the pre-round check gave a
// rank three pings, and each such rank failed its round of 1,024 (two in
// three rounds) or lost its model.
func TestDriverRoundsAtTenPercentLoss(t *testing.T) {
	nodes, seeds := 1024, 3
	if raceEnabled || testing.Short() || runtime.GOARCH == "arm" { // arm: qemu-arm-static, some 25 times slower
		nodes, seeds = 256, 10
	}
	ctx := context.Background()
	streaks3 := 0
	for seed := range seeds {
		s := &rootStreaks{simNetwork: mustSim(t, SimConfig{Nodes: nodes, Seed: uint64(seed + 1), DriftPPM: 100, OffsetNS: 1e9,
			LatencyNS: 5_000, JitterNS: 1_000, Loss: 0.1}), run: make([]int, nodes), most: make([]int, nodes)}
		r := simDriver(s, s.simNetwork, hca{}, DefaultParams()).round(ctx)
		if r.Err != nil {
			t.Errorf("%d ranks, seed %d: the round failed: %v", nodes, seed+1, r.Err)
			continue
		}
		if len(r.Undelivered) != 0 || len(r.Result.Failed) != 0 || r.MaxBound <= 0 {
			t.Errorf("%d ranks, seed %d: undelivered %v (%v), failed %v, max bound %d", nodes, seed+1, r.Undelivered, r.DeliveryErr, r.Result.Failed, r.MaxBound)
		}
		for _, n := range s.most {
			if n >= 3 {
				streaks3++
			}
		}
	}
	t.Logf("%d ranks, %d rounds: %d ranks had 3 or more root exchanges lost in a row", nodes, seeds, streaks3)
	if streaks3 == 0 {
		t.Errorf("no rank had 3 root exchanges lost in a row in %d rounds of %d ranks: the test tests nothing", seeds, nodes)
	}
}

// deadRanks is a Network on which every exchange with the dead ranks is
// lost after the network's timeout.
type deadRanks struct {
	*simNetwork
	dead  []int
	mu    sync.Mutex
	tried map[int]int // exchanges with each dead rank
}

func (d *deadRanks) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	for _, r := range []int{from, to} {
		if slices.Contains(d.dead, r) {
			d.mu.Lock()
			d.tried[r]++
			d.mu.Unlock()
			d.simNetwork.Advance(1_000_000)
			return Exchange{}, fmt.Errorf("rank %d is dead: %w", r, ErrLost)
		}
	}
	return d.simNetwork.Exchange(ctx, from, to)
}

// TestDriverNamesDeadRanks: ranks that answer nothing fail the round,
// every one of them named (FailureKind too), each pinged reachTries times
// and the dead ranks' timeouts overlapping (one batch's worth of simulated
// time, not one per dead rank); a loss-free network's round succeeds.
func TestDriverNamesDeadRanks(t *testing.T) {
	ctx := context.Background()
	d := &deadRanks{simNetwork: lanSim(t, 64, 1), dead: []int{5, 20, 31}, tried: map[int]int{}}
	r := simDriver(d, d.simNetwork, hca{}, DefaultParams()).round(ctx)
	var na *NoAnswerError
	if !errors.As(r.Err, &na) || na.Rank != 5 || !slices.Equal(na.Others, []int{20, 31}) || !errors.Is(r.Err, ErrLost) {
		t.Fatalf("round with ranks 5, 20 and 31 dead: %v; want a NoAnswerError naming them", r.Err)
	}
	if want := "rank 5 does not answer (down, another key, or another peer list), nor do ranks 20 and 31"; FailureKind(r.Err) != want {
		t.Errorf("FailureKind %q, want %q", FailureKind(r.Err), want)
	}
	for _, rank := range d.dead {
		if d.tried[rank] != reachTries {
			t.Errorf("rank %d pinged %d times, want %d", rank, d.tried[rank], reachTries)
		}
	}
	// The dead are of the first batch of ranks: they wait their reachTries
	// timeouts together.
	if el := d.Elapsed(); el >= 2*reachTries*1_000_000 {
		t.Errorf("the pre-round check took %d ns of simulated time: the dead ranks' timeouts did not overlap", el)
	}
	s := lanSim(t, 64, 1)
	if r := simDriver(s, s, hca{}, DefaultParams()).round(ctx); r.Err != nil || len(r.Undelivered) != 0 {
		t.Errorf("round with every rank alive: %v, undelivered %v", r.Err, r.Undelivered)
	}
}
