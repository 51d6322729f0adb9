package hca

import (
	"context"
	"errors"
	"fmt"

	"github.com/monagent/monagent/timebase"
)

// Algorithm is one clock synchronisation method. Sync runs it on net and
// returns every rank's model relative to the root.
type Algorithm interface {
	Name() string
	Sync(ctx context.Context, net Network, p Params) (Result, error)
}

// pauser is implemented by networks whose time can be let pass without
// sleeping (simNetwork). On other networks the algorithms wait on a timer.
type pauser interface {
	Pause(ctx context.Context, ns int64) error
}

// elapser is implemented by networks with their own notion of elapsed time
// (simNetwork); Result.DurationNS is measured with it, otherwise with the wall
// clock.
type elapser interface {
	Elapsed() int64
}

// paralleler is implemented by networks on which exchanges between disjoint
// pairs of nodes can run at the same time. Parallel calls f(i) for i in
// [0,n), possibly concurrently, and returns the first error.
type paralleler interface {
	Parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error
}

// Params are the knobs every algorithm shares; each uses the ones it needs.
type Params struct {
	RTTWarmup    int   // ping-pongs thrown away before an RTT measurement
	RTTExchanges int   // ping-pongs of an RTT measurement
	Fitpoints    int   // F: fitpoints per fitted line
	Exchanges    int   // E: ping-pongs per fitpoint
	SpacingNS    int64 // least time between the starts of a pair's successive fitpoints
	MinPingPongs int   // SKaMPI offset measurement: at least
	MaxPingPongs int   // and at most this many ping-pongs
	Fit          FitMethod
	// Filter chooses each fitpoint's sample among its exchanges.
	Filter FitpointFilter
	// Retries is how often a lost exchange is retried, and how often a pair
	// is re-measured after its fit was rejected for an absurd slope or for
	// scattered fitpoints (ErrScattered).
	Retries int
	// KeepGoing: a rank that cannot be synchronised (an exchange lost on
	// every try, its fits rejected on every try, or a rank on its path to
	// the root among those) is listed in Result.Failed and the others go
	// on. Without it the first such failure ends Sync with its error.
	KeepGoing bool
}

// DefaultParams returns parameters for a LAN: 30 fitpoints of 30 exchanges
// 200 ms apart, so that each line spans 5.8 s, each fitpoint the exchange
// with the shortest round trip, and up to 100 ping-pongs per SKaMPI offset
// (HCA's and HCA2's intercepts). Between 16 agents over loopback UDP they
// give ≤ 2 µs at the sync's end and ≤ 5 µs 20 s later in about 6.4 s; 20
// fitpoints 100 ms apart and 30 ping-pongs took 2.3 s but erred up to 8 µs
// 20 s later: a line's slope error, which the time since the fit
// multiplies, shrinks with the time the line spans.
func DefaultParams() Params {
	return Params{
		RTTWarmup:    5,
		RTTExchanges: 20,
		Fitpoints:    30,
		Exchanges:    30,
		SpacingNS:    200_000_000,
		MinPingPongs: 5,
		MaxPingPongs: 100,
		Fit:          LeastSquares,
		Filter:       MinRTTSample,
		Retries:      3,
	}
}

// Validate reports the first unusable parameter.
func (p Params) Validate() error {
	switch {
	case p.RTTWarmup < 0:
		return fmt.Errorf("rtt_warmup %d: must not be negative", p.RTTWarmup)
	case p.RTTExchanges < 1:
		return fmt.Errorf("rtt_exchanges %d: need at least 1", p.RTTExchanges)
	case p.Fitpoints < 2:
		return fmt.Errorf("fitpoints %d: a line needs at least 2", p.Fitpoints)
	case p.Exchanges < 1:
		return fmt.Errorf("exchanges %d: need at least 1", p.Exchanges)
	case p.SpacingNS < 0:
		return fmt.Errorf("spacing %d ns: must not be negative", p.SpacingNS)
	case p.MinPingPongs < 1 || p.MaxPingPongs < p.MinPingPongs:
		return fmt.Errorf("ping-pongs min %d max %d: want 1 <= min <= max", p.MinPingPongs, p.MaxPingPongs)
	case p.Fit != LeastSquares && p.Fit != TheilSen:
		return fmt.Errorf("fit %d: unknown method", int(p.Fit))
	case p.Filter != MedianSample && p.Filter != MinRTTSample:
		return fmt.Errorf("fitpoint filter %d: unknown", int(p.Filter))
	case p.Retries < 0:
		return fmt.Errorf("retries %d: must not be negative", p.Retries)
	}
	return nil
}

// MinFitpoints is the fewest fitpoints of the f a pair measures (Params.
// Fitpoints) from which its line is fitted: half of them, rounded up, and
// at least 2. A fitpoint whose exchange is lost on every try is left out
// (a rank at 10 % loss gives up about one exchange in 10,000, one fitpoint
// of 30 exchanges in 330); the line through the rest spans about the same
// time and its slope error grows as 1/sqrt(n), by at most √2 at half of
// them. A pair that keeps fewer — more than half its fitpoints lost on
// every try, a rank gone or a link all but down — fails (its rank with
// KeepGoing, else the round), and stops measuring as soon as it cannot
// reach the minimum.
func MinFitpoints(f int) int { return max(2, (f+1)/2) }

// Result is what a synchronisation produced.
type Result struct {
	Algorithm string
	// Models[r] is rank r's clock relative to the root's; Models[0] is the
	// identity. Uncertainty(x) of each grows with the distance from the
	// measurements, and is meant to cover about 99 % of true errors: the
	// drift-modelling algorithms publish their fits' ResidualNS and
	// SlopeErr scaled to coverageSigmas. For HCA, HCA2 and SKaMPI the floor
	// is the SKaMPI intervals' half-width (summed over the levels for
	// HCA2), a hard bound whatever the links' asymmetry; for JK and HCA3 it
	// is a bound on the fitpoints' shared bias from the pair's RTT spread
	// (fitpointBias), plus for HCA3 the parents' Uncertainty at the time
	// the child was fitted. For the offset-only tree it is the summed
	// half-RTTs and the worst slope over the lag between the levels. Link
	// asymmetry is invisible to JK and HCA3's bound.
	Models    []timebase.LinearModel
	Exchanges int64 // ping-pongs attempted, retries of lost ones included
	Lost      int64 // of which lost
	// Messages counts two per exchange attempted (a lost one is counted in
	// full) plus the model transfers of tree algorithms (one per tree edge
	// up, one per rank for the root's scatter).
	Messages   int64
	DurationNS int64 // on the network's clock (simNetwork: simulated time)
	Rejected   int   // fits rejected for an absurd slope or scattered fitpoints (ErrScattered), then re-measured
	// GivenUp counts the exchanges lost on every one of their Retries+1
	// tries (each try is counted in Lost). Each leaves out what it was
	// part of — a warm-up or RTT ping-pong, a SKaMPI or min-RTT ping-pong,
	// a fitpoint (FitpointsSkipped) — and fails its pair only when too
	// little is left (MinFitpoints, lossTolerated).
	GivenUp int64
	// FitpointsSkipped counts the fitpoints left out of their lines because
	// an exchange of theirs was given up.
	FitpointsSkipped int64
	// Failed are the ranks that were not synchronised, in rank order, with
	// why: only with Params.KeepGoing. Their Models are zero and mean
	// nothing.
	Failed []RankFailure
}

// RankFailure is a rank a synchronisation could not model, and why.
type RankFailure struct {
	Rank int
	Err  error
}

// errUpstream is why a rank fails (wrapped, with the rank) when a rank on
// its path to the root failed: its model would have been merged through,
// or fitted against, that rank's.
var errUpstream = errors.New("hca: a rank on its path to the root was not synchronised")
