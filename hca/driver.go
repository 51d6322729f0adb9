package hca

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/monagent/monagent/timebase"
)

// A driver runs the synchronisation rounds of the rank that drives them (an
// agent's rank 0) over its Endpoint, for as long as Run's context lasts.
// Before a round it pings every other rank until it answers, up to three
// times; then it runs the algorithm on a PeerNetwork, gives each rank its
// model (a lost delivery tried up to three times) and reports the round to
// OnRound. It syncs again after Resync, or sooner when the bound predicted
// for a rank's model would pass MaxBound, but not sooner than RetryAfter; a
// failed round is tried again after RetryAfter, every rank keeping its last
// model meanwhile, its bound growing with time.
//
// Rounds are numbered from 1 for as long as the driver lives, across Runs
// (the ranks refuse an older round of its Endpoint's epoch); a failed
// round's number is tried again. The driver does not log: OnRound says what
// happened.
type driver struct {
	cfg  driverConfig
	net  *PeerNetwork
	next int64 // the next round's number (Run's goroutine)
}

// driverConfig describes a driver.
type driverConfig struct {
	// Endpoint is the driving rank's; its Serve must run while Run does,
	// and so must the other ranks'. Its clock is the global timeline.
	Endpoint  *Endpoint
	Ranks     int // the cluster's size
	Algorithm Algorithm
	Params    Params
	// Resync is the longest time between two rounds; MaxBound makes one
	// sooner; RetryAfter is the wait after a failed round and the shortest
	// between two rounds.
	Resync, MaxBound, RetryAfter time.Duration
	// OnRound gets every round's outcome on Run's goroutine; Run waits for
	// it to return.
	OnRound func(Round)
}

// Round is the outcome of a round of rank 0's Node.
type Round struct {
	Number int64
	// Err is why the round failed: a NoAnswerError, or the algorithm's
	// error (FailureKind names it); nil when the models were made.
	Err    error
	Result Result // the algorithm's; Result.Models[r] is rank r's model
	End    int64  // the driver's clock when the algorithm ended
	// Realtime is CLOCK_REALTIME then: the time of the round's records.
	Realtime int64
	// Undelivered are the ranks that did not acknowledge their model, in
	// rank order; DeliveryErr joins their errors.
	Undelivered []int
	DeliveryErr error
	MaxBound    int64 // the largest Bound of a rank's model at RankClock
}

// RankClock is rank's clock at the round's end, from its model: near enough
// for a bound.
func (r Round) RankClock(rank int) int64 { return r.End + r.Result.Models[rank].Intercept }

// newDriver returns the driver of cfg; nothing runs before Run.
func newDriver(cfg driverConfig) (*driver, error) {
	if cfg.Algorithm == nil || cfg.OnRound == nil {
		return nil, errors.New("hca driver: no algorithm or no OnRound")
	}
	if cfg.Resync <= 0 || cfg.MaxBound <= 0 || cfg.RetryAfter <= 0 {
		return nil, fmt.Errorf("hca driver: resync %v, max bound %v, retry after %v: all must be positive", cfg.Resync, cfg.MaxBound, cfg.RetryAfter)
	}
	net, err := NewPeerNetwork(cfg.Endpoint, cfg.Ranks)
	if err != nil {
		return nil, err
	}
	return &driver{cfg: cfg, net: net, next: 1}, nil
}

// Serve serves the driver's Endpoint and runs rounds over it until ctx
// ends or the Endpoint's Serve fails; it returns Serve's error once the
// rounds have stopped too.
func (d *driver) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var rounds sync.WaitGroup
	rounds.Go(func() { d.Run(ctx) })
	err := d.cfg.Endpoint.Serve(ctx)
	cancel()
	rounds.Wait()
	return err
}

// Run runs rounds until ctx ends; the Endpoint's Serve must run meanwhile
// (Serve runs both). A round the algorithm finished is
// reported even when ctx ends while its models are given out; a round
// failed by ctx's end is not.
func (d *driver) Run(ctx context.Context) {
	var wait time.Duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		r := d.round(ctx)
		if r.Err != nil && ctx.Err() != nil {
			return
		}
		d.cfg.OnRound(r)
		if ctx.Err() != nil {
			return
		}
		if r.Err != nil {
			wait = d.cfg.RetryAfter
			continue
		}
		d.next++
		wait = d.untilResync(r.Result.Models)
	}
}

// round runs one synchronisation and gives out its models.
func (d *driver) round(ctx context.Context) Round {
	r := Round{Number: d.next}
	for rank := 1; rank < d.cfg.Ranks; rank++ {
		if r.Err = d.reach(ctx, rank); r.Err != nil {
			return r
		}
	}
	if r.Result, r.Err = d.cfg.Algorithm.Sync(ctx, d.net, d.cfg.Params); r.Err != nil {
		return r
	}
	r.End = d.cfg.Endpoint.clock()
	r.Realtime, _ = timebase.Realtime.Now()
	var errs []error
	for rank := 1; rank < d.cfg.Ranks; rank++ {
		if err := d.give(ctx, rank, r); err != nil {
			r.Undelivered = append(r.Undelivered, rank)
			errs = append(errs, err)
		}
		r.MaxBound = max(r.MaxBound, Bound(r.Result.Models[rank], r.RankClock(rank)))
	}
	r.DeliveryErr = errors.Join(errs...)
	return r
}

// reach pings rank until it answers, up to three times.
func (d *driver) reach(ctx context.Context, rank int) error {
	var err error
	for range 3 {
		if _, err = d.cfg.Endpoint.Ping(ctx, rank); err == nil {
			return nil
		}
	}
	return &NoAnswerError{Rank: rank, Err: err}
}

// give sends rank its model of r, up to three times while it is lost.
func (d *driver) give(ctx context.Context, rank int, r Round) error {
	var err error
	for range 3 {
		if err = d.cfg.Endpoint.SendModel(ctx, rank, r.Number, r.Result.Models[rank]); !errors.Is(err, ErrLost) {
			return err
		}
	}
	return err
}

// untilResync is the time to the next round: Resync, or sooner when the
// predicted bound of a model passes MaxBound, but not sooner than
// RetryAfter.
func (d *driver) untilResync(models []timebase.LinearModel) time.Duration {
	now := d.cfg.Endpoint.clock()
	step := max(d.cfg.Resync/64, time.Millisecond)
	for t := step; t < d.cfg.Resync; t += step {
		for _, m := range models[1:] {
			if Bound(m, now+m.Intercept+int64(t)) > int64(d.cfg.MaxBound) {
				return max(t, d.cfg.RetryAfter)
			}
		}
	}
	return d.cfg.Resync
}

// NoAnswerError is a rank that did not answer before a round.
type NoAnswerError struct {
	Rank int
	Err  error
}

func (e *NoAnswerError) Error() string {
	return fmt.Sprintf("rank %d does not answer (down, another key, or another peer list): %v", e.Rank, e.Err)
}

func (e *NoAnswerError) Unwrap() error { return e.Err }

// FailureKind is what a failed round's error is, in words that stay the
// same while the same thing fails (no sequence numbers, rounds or
// timings): which rank does not answer, or how the algorithm failed.
func FailureKind(err error) string {
	var na *NoAnswerError
	switch {
	case errors.As(err, &na):
		return fmt.Sprintf("rank %d does not answer (down, another key, or another peer list)", na.Rank)
	case errors.Is(err, ErrLost):
		return "exchanges lost during the round (a rank stopped answering)"
	case errors.Is(err, ErrScattered), errors.Is(err, ErrAbsurdSlope):
		return "line fits rejected on every try (a clock stepped or a rank is overloaded)"
	}
	return err.Error()
}
