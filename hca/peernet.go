package hca

import (
	"context"
	"fmt"
	"sync"
)

// PeerNetwork is the Network an agent's algorithm harness sees on the node
// that drives a synchronisation: exchanges from the local rank run over its
// Endpoint (Ping); exchanges between two other ranks are run by the first of
// them at the driver's request (run), so every algorithm runs on it. It
// implements paralleler: the exchanges of disjoint pairs run concurrently.
type PeerNetwork struct {
	ep   *Endpoint
	size int
}

// defaultBurst is how many back-to-back ping-pongs a PeerNetwork's
// exchange is the best of.
const defaultBurst = 3

// NewPeerNetwork returns the Network of p ranks driven by ep. ep's Serve must
// run while it is used, and so must the other ranks'.
func NewPeerNetwork(ep *Endpoint, p int) (*PeerNetwork, error) {
	if p < 1 || int(ep.rank) >= p {
		return nil, fmt.Errorf("hca peer network: %d ranks, local rank %d", p, ep.rank)
	}
	return &PeerNetwork{ep: ep, size: p}, nil
}

// Size implements Network.
func (n *PeerNetwork) Size() int { return n.size }

// Exchange implements Network.
func (n *PeerNetwork) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if from < 0 || from >= n.size || to < 0 || to >= n.size || from == to {
		return Exchange{}, fmt.Errorf("hca peer network: exchange %d->%d: ranks must differ and lie in 0..%d", from, to, n.size-1)
	}
	if from == int(n.ep.rank) {
		return n.ep.pingBurst(ctx, to, defaultBurst)
	}
	return n.ep.run(ctx, from, to, defaultBurst)
}

// Parallel implements paralleler: f(0..k-1) run on their own goroutines;
// the first error cancels the others' context and is returned.
func (n *PeerNetwork) Parallel(ctx context.Context, k int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}
