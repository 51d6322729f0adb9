package hca

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/monagent/monagent/timebase"
)

// A driver runs the synchronisation rounds of the rank that drives them (an
// agent's rank 0) over its Endpoint, for as long as Run's context lasts.
// Before a round it pings every other rank until it answers, up to
// reachTries times (a rank that answers none is down: the round fails,
// naming every such rank); then it runs the algorithm on a PeerNetwork,
// gives each rank its model (a lost delivery tried up to giveTries times)
// and reports the round to OnRound. The pre-round pings and the models go
// to linkConcurrency ranks at a time, so that neither a lossy network's
// timeouts nor a dead rank's add up over a thousand ranks. It syncs again after Resync, or sooner when the bound predicted
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
	net  Network
	link driverLink // nil: the Endpoint's (link)
	next int64      // the next round's number (Run's goroutine)
}

// reachTries is how many pings the pre-round check sends a rank that does
// not answer before it calls the rank down, and giveTries how often a lost
// model is sent again. At 10 % of exchanges lost, three tries missed one
// rank of 1,000 (and with it, before, the round of 1,024 ranks two times
// in three); eight miss one in 10⁸. A dead rank costs eight ping timeouts
// a round, once for all dead ranks of a batch (linkConcurrency).
const (
	reachTries = 8
	giveTries  = 8
)

// linkConcurrency is how many ranks the pre-round check pings, and the
// models go to, at once: enough to overlap the timeouts of a lossy network,
// few enough not to overrun the driver's socket buffer with answers.
const linkConcurrency = 32

// driverLink is what a driver's own messages travel over: an Endpoint
// (endpointLink), or a simulated network in SimExperiment (simLink).
type driverLink interface {
	ping(ctx context.Context, rank int) error
	sendModel(ctx context.Context, rank int, round int64, m timebase.LinearModel) error
	clock() int64 // the driver's clock: the global timeline
}

// endpointLink is a driver's link over its Endpoint.
type endpointLink struct{ ep *Endpoint }

func (l endpointLink) ping(ctx context.Context, rank int) error {
	_, err := l.ep.Ping(ctx, rank)
	return err
}

func (l endpointLink) sendModel(ctx context.Context, rank int, round int64, m timebase.LinearModel) error {
	return l.ep.SendModel(ctx, rank, round, m)
}

func (l endpointLink) clock() int64 { return l.ep.clock() }

// links is d's link.
func (d *driver) links() driverLink {
	if d.link != nil {
		return d.link
	}
	return endpointLink{d.cfg.Endpoint}
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
	if r.Err = d.reach(ctx); r.Err != nil {
		return r
	}
	if r.Result, r.Err = d.cfg.Algorithm.Sync(ctx, d.net, d.cfg.Params); r.Err != nil {
		return r
	}
	r.End = d.links().clock()
	r.Realtime = timebase.RealtimeNS()
	r.Undelivered, r.DeliveryErr = d.give(ctx, r)
	failed := failedRanks(r.Result)
	for rank := 1; rank < d.cfg.Ranks; rank++ {
		if !failed[rank] {
			r.MaxBound = max(r.MaxBound, Bound(r.Result.Models[rank], r.RankClock(rank)))
		}
	}
	return r
}

// failedRanks are the ranks res has no model for (KeepGoing).
func failedRanks(res Result) map[int]bool {
	failed := make(map[int]bool, len(res.Failed))
	for _, f := range res.Failed {
		failed[f.Rank] = true
	}
	return failed
}

// reach pings every other rank until it answers, up to reachTries times
// while its pings are lost; the ranks that answer none fail the round
// (a NoAnswerError naming them all).
func (d *driver) reach(ctx context.Context) error {
	errs := d.eachRank(ctx, nil, func(ctx context.Context, rank int) error {
		var err error
		for range reachTries {
			if err = d.links().ping(ctx, rank); !errors.Is(err, ErrLost) {
				return err
			}
		}
		return err
	})
	var na *NoAnswerError
	for rank, err := range errs {
		switch {
		case err == nil:
		case na == nil:
			na = &NoAnswerError{Rank: rank, Err: err}
		default:
			na.Others = append(na.Others, rank)
		}
	}
	if na == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("hca driver: pre-round check: %w", err)
	}
	return na
}

// give sends every rank with a model of r its model, up to giveTries times
// while it is lost, and returns the ranks that did not acknowledge, in
// rank order, and their errors joined.
func (d *driver) give(ctx context.Context, r Round) ([]int, error) {
	errs := d.eachRank(ctx, failedRanks(r.Result), func(ctx context.Context, rank int) error {
		var err error
		for range giveTries {
			if err = d.links().sendModel(ctx, rank, r.Number, r.Result.Models[rank]); !errors.Is(err, ErrLost) {
				return err
			}
		}
		return err
	})
	var undelivered []int
	var all []error
	for rank, err := range errs {
		if err != nil {
			undelivered = append(undelivered, rank)
			all = append(all, err)
		}
	}
	return undelivered, errors.Join(all...)
}

// eachRank calls f for every rank but the driver's and those in skip,
// linkConcurrency ranks at a time (concurrently where the network is a
// paralleler), and returns f's errors by rank (nil where it succeeded or
// was not called).
func (d *driver) eachRank(ctx context.Context, skip map[int]bool, f func(ctx context.Context, rank int) error) []error {
	var ranks []int
	for rank := 1; rank < d.cfg.Ranks; rank++ {
		if !skip[rank] {
			ranks = append(ranks, rank)
		}
	}
	errs := make([]error, d.cfg.Ranks)
	call := func(ctx context.Context, rank int) error {
		errs[rank] = f(ctx, rank)
		return nil
	}
	for len(ranks) > 0 {
		batch := ranks[:min(linkConcurrency, len(ranks))]
		ranks = ranks[len(batch):]
		if par, ok := d.net.(paralleler); ok {
			_ = par.Parallel(ctx, len(batch), func(ctx context.Context, i int) error { return call(ctx, batch[i]) })
			continue
		}
		for _, rank := range batch {
			_ = call(ctx, rank)
		}
	}
	return errs
}

// untilResync is the time to the next round: Resync, or sooner when the
// predicted bound of a model passes MaxBound, but not sooner than
// RetryAfter.
func (d *driver) untilResync(models []timebase.LinearModel) time.Duration {
	now := d.links().clock()
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

// NoAnswerError is a rank that did not answer before a round, and the
// others that did not either.
type NoAnswerError struct {
	Rank   int
	Err    error // Rank's
	Others []int // in rank order
}

// noAnswerShown is how many of the other ranks a NoAnswerError names.
const noAnswerShown = 10

// kind names the ranks that did not answer, Rank first: "rank 3 does not
// answer (...)", then ", nor do ranks 7 and 9", or the first
// noAnswerShown of those and how many more.
func (e *NoAnswerError) kind() string {
	s := fmt.Sprintf("rank %d does not answer (down, another key, or another peer list)", e.Rank)
	if len(e.Others) == 0 {
		return s
	}
	var b strings.Builder
	if len(e.Others) == 1 {
		b.WriteString(s + ", nor does rank")
	} else {
		b.WriteString(s + ", nor do ranks")
	}
	shown := e.Others[:min(len(e.Others), noAnswerShown)]
	for i, r := range shown {
		switch {
		case i == 0:
			b.WriteString(" ")
		case i == len(e.Others)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(r))
	}
	if n := len(e.Others) - len(shown); n > 0 {
		fmt.Fprintf(&b, " and %d more", n)
	}
	return b.String()
}

func (e *NoAnswerError) Error() string { return fmt.Sprintf("%s: %v", e.kind(), e.Err) }

func (e *NoAnswerError) Unwrap() error { return e.Err }

// FailureKind is what a failed round's error is, in words that stay the
// same while the same thing fails (no sequence numbers, rounds or
// timings): which rank does not answer, or how the algorithm failed.
func FailureKind(err error) string {
	var na *NoAnswerError
	switch {
	case errors.As(err, &na):
		return na.kind()
	case errors.Is(err, ErrLost):
		return "exchanges lost during the round (a rank stopped answering)"
	case errors.Is(err, ErrScattered), errors.Is(err, ErrAbsurdSlope):
		return "line fits rejected on every try (a clock stepped or a rank is overloaded)"
	}
	return err.Error()
}
