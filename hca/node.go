package hca

import (
	"context"
	"errors"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/timebase"
)

// Node is one agent's member of a cluster: its Endpoint, which every rank
// serves (answering pings, running the exchanges rank 0 asks of it), and on
// rank 0 the driver of the rounds. Rank 0's clock is the global timeline;
// every other rank takes the models rank 0 gives it into its Global and
// refuses, counted, a model from any other rank. A Node counts its rounds
// and models (NodeStats) and does not log: OnModel and OnRound say what
// happened. Building it binds the socket and starts nothing.
type Node struct {
	cfg    NodeConfig
	ep     *Endpoint
	driver *driver // rank 0's

	rounds, failures, failing, modelsSent, modelsUndelivered atomic.Uint64
	modelsTaken, modelsRefused, boundExceeded                atomic.Uint64
}

// NodeConfig describes a Node.
type NodeConfig struct {
	Cluster Cluster
	Rank    int
	Listen  string // the address to bind; "": the rank's in Cluster
	Key     []byte // the cluster key
	Timeout time.Duration
	// Algorithm, Params, Resync, MaxBound and RetryAfter are rank 0's
	// rounds (driverConfig).
	Algorithm                    Algorithm
	Params                       Params
	Resync, MaxBound, RetryAfter time.Duration
	// Global is this agent's place on the timeline; its HCA clock is the
	// endpoint's clock.
	Global *Global
	// OnModel gets each model this rank took from rank 0, once Global has
	// it, on the endpoint's goroutine; it must not block. OnRound gets each
	// of rank 0's rounds, on the driver's goroutine. Both run before the
	// node counts what they got: whoever sees a count sees what they did.
	OnModel func(round int64, m timebase.LinearModel)
	OnRound func(Round)
}

// NodeStats are a Node's counts: its endpoint's, and its rounds' and
// models'.
type NodeStats struct {
	EndpointStats
	// Rank 0: rounds that made models, rounds that failed, and those failed
	// since the last that did not.
	Rounds, RoundFailures, FailingRounds uint64
	// Rank 0: models the ranks acknowledged, and those they did not.
	ModelsSent, ModelsUndelivered uint64
	// Models taken from rank 0, and refused from another rank.
	ModelsTaken, ModelsRefused uint64
	// Rank 0: rounds whose largest bound passed MaxBound.
	BoundExceeded uint64
}

// NewNode binds the endpoint of cfg and, on rank 0, makes its driver and
// sets Global to the identity (rank 0's clock is the timeline). It fails
// when the endpoint cannot bind, or on a schedule the driver refuses.
func NewNode(cfg NodeConfig) (*Node, error) {
	n := &Node{cfg: cfg}
	ecfg := cfg.Cluster.Endpoint(cfg.Rank, cfg.Listen)
	ecfg.Key, ecfg.Clock, ecfg.Timeout, ecfg.OnModel = cfg.Key, cfg.Global.Now, cfg.Timeout, n.onModel
	var err error
	if n.ep, err = Listen(ecfg); err != nil {
		return nil, err
	}
	if cfg.Rank != 0 {
		return n, nil
	}
	cfg.Global.Set(timebase.Identity, 0)
	n.driver, err = newDriver(driverConfig{Endpoint: n.ep, Ranks: len(cfg.Cluster.Addrs), Algorithm: cfg.Algorithm, Params: cfg.Params,
		Resync: cfg.Resync, MaxBound: cfg.MaxBound, RetryAfter: cfg.RetryAfter, OnRound: n.onRound})
	if err != nil {
		n.ep.Close()
		return nil, err
	}
	return n, nil
}

// Serve serves the endpoint and, on rank 0, runs the rounds until ctx
// ends; it returns once both have stopped, nil when ctx ended them, else
// the failed socket's error.
func (n *Node) Serve(ctx context.Context) error {
	serve := n.ep.Serve
	if n.driver != nil {
		serve = n.driver.Serve
	}
	if err := serve(ctx); ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
		return err
	}
	return nil
}

// Close closes the endpoint's socket.
func (n *Node) Close() error { return n.ep.Close() }

// LocalAddr is the address the endpoint is bound to.
func (n *Node) LocalAddr() netip.AddrPort { return n.ep.LocalAddr() }

// Stats are the node's counts now.
func (n *Node) Stats() NodeStats {
	return NodeStats{EndpointStats: n.ep.Stats(),
		Rounds: n.rounds.Load(), RoundFailures: n.failures.Load(), FailingRounds: n.failing.Load(),
		ModelsSent: n.modelsSent.Load(), ModelsUndelivered: n.modelsUndelivered.Load(),
		ModelsTaken: n.modelsTaken.Load(), ModelsRefused: n.modelsRefused.Load(), BoundExceeded: n.boundExceeded.Load()}
}

// onModel takes a model rank 0 gave (the endpoint hands over only models
// newer than the last of rank 0's epoch).
func (n *Node) onModel(from int, round int64, m timebase.LinearModel) {
	if from != 0 {
		n.modelsRefused.Add(1)
		return
	}
	n.cfg.Global.Set(m, round)
	if n.cfg.OnModel != nil {
		n.cfg.OnModel(round, m)
	}
	n.modelsTaken.Add(1)
}

// onRound hands a round on, then counts it.
func (n *Node) onRound(r Round) {
	if n.cfg.OnRound != nil {
		n.cfg.OnRound(r)
	}
	if r.Err != nil {
		n.failing.Add(1)
		n.failures.Add(1)
	} else {
		n.modelsSent.Add(uint64(len(n.cfg.Cluster.Addrs) - 1 - len(r.Undelivered)))
		n.modelsUndelivered.Add(uint64(len(r.Undelivered)))
		if r.MaxBound > int64(n.cfg.MaxBound) {
			n.boundExceeded.Add(1)
		}
		n.failing.Store(0)
		n.rounds.Add(1)
	}
}
