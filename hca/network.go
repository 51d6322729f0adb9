package hca

import (
	"context"
	"errors"
	"fmt"
)

// Exchange is one ping-pong from node From to node To: From's clock when the
// request left and when the answer came back, and To's clock when it
// answered. All three are nanoseconds of the nodes' own clocks (in the agent,
// CLOCK_MONOTONIC_RAW, which nobody steers, so that a linear model holds
// between re-syncs).
type Exchange struct {
	From, To int
	Send     int64 // From's clock, request sent
	Remote   int64 // To's clock, when it answered
	Recv     int64 // From's clock, answer received
}

// RTT is the round trip in From's clock.
func (e Exchange) rtt() int64 { return e.Recv - e.Send }

// Network is what the algorithms run on: p nodes, ranked 0..p-1 (0 is the
// root), any of which can be made to run a ping-pong with any other. The
// agent's implementation carries exchanges over authenticated UDP between
// agents; simNetwork simulates clocks and links in memory, with the true clocks
// known, so that every model's error can be measured.
type Network interface {
	Size() int
	// Exchange runs one ping-pong from node from to node to. A lost request
	// or answer is an error wrapping ErrLost after the network's timeout.
	Exchange(ctx context.Context, from, to int) (Exchange, error)
}

// ErrLost is an exchange whose request or answer never arrived.
var ErrLost = errors.New("hca: exchange lost")

// lossBudget is how many exchanges of one measurement (an RTT measurement,
// a SKaMPI or min-RTT offset, a pair's fitpoints) may be given up — lost on
// every try (ErrLost) — and left out: half of them, rounded down. One more
// fails the measurement, as soon as it is lost, so that a rank gone for good
// is given up on after about half the exchanges, not all of them.
type lossBudget struct {
	lost, allowed int
}

// newLossBudget is the budget of a measurement of n exchanges.
func newLossBudget(n int) lossBudget { return lossBudget{allowed: n / 2} }

// skip reports whether err, an exchange's error, is a loss the budget still
// leaves out; every other error, and a loss beyond the budget, is not.
func (b *lossBudget) skip(err error) bool {
	if !errors.Is(err, ErrLost) || b.lost >= b.allowed {
		return false
	}
	b.lost++
	return true
}

// exceeded wraps err, the loss that passed the budget of n exchanges.
func (b *lossBudget) exceeded(n int, err error) error {
	if !errors.Is(err, ErrLost) {
		return err
	}
	return fmt.Errorf("%d of %d exchanges lost, more than the %d that may be left out: %w", b.lost+1, n, b.allowed, err)
}
