package hca

import (
	"context"
	"fmt"

	"github.com/monagent/monagent/timebase"
)

// simLink is a driver's link over a simulated network: a pre-round ping
// and a model's delivery are each one exchange of the root with the rank,
// lost as the network loses exchanges, taking its simulated time.
type simLink struct {
	net Network     // the exchanges (a simNetwork, or a test's wrapper of one)
	sim *simNetwork // the root's clock
}

func (l simLink) ping(ctx context.Context, rank int) error {
	_, err := l.net.Exchange(ctx, 0, rank)
	return err
}

func (l simLink) sendModel(ctx context.Context, rank int, round int64, m timebase.LinearModel) error {
	if err := checkModel(m, int64(m.N)); err != nil {
		return fmt.Errorf("hca sim: model for rank %d of round %d: %v", rank, round, err)
	}
	_, err := l.net.Exchange(ctx, 0, rank)
	return err
}

func (l simLink) clock() int64 { return l.sim.Now(0) }

// simDriver is the driver of an agent's rounds over net, a simulated
// network (or a test's wrapper of sim): its pre-round check, algorithm
// and models' delivery, without Run's waits between rounds.
func simDriver(net Network, sim *simNetwork, alg Algorithm, p Params) *driver {
	return &driver{cfg: driverConfig{Ranks: net.Size(), Algorithm: alg, Params: p}, net: net, link: simLink{net, sim}, next: 1}
}
