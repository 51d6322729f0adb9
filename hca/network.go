package hca

import (
	"context"
	"errors"
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
