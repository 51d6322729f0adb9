package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
)

// ptp4lPush is the decoder of ptp4l's pushed events (SUBSCRIBE_EVENTS_NP):
// the subscriber's Run is the producer; each port state change is one
// ptp4l_port_event record at the time it was read, from the state before
// it (the port's previous push, or the PORT_DATA_SET asked for right after
// subscribing) to the new one. A ptp4l that refuses the subscription is
// said once (the collection's error and subscription_refused); the ptp4l
// source polls PORT_DATA_SET at its interval all the same.
type ptp4lPush struct {
	tags    []record.Tag // instance=, for a named instance
	sub     *ptp.Subscriber
	refused atomic.Bool
	lost    uint64 // sub.Lost already handed to the queue (producer)

	// The collection goroutine's.
	states map[protocol.PortIdentity]protocol.PortState
	times  map[string]*record.SeriesTime // per measurement and port
	bumps  uint64
	events uint64
}

func newPtp4lPush(c Ptp4lConfig, runtimeDir string) *ptp4lPush {
	return &ptp4lPush{
		sub:    ptp.NewSubscriber(c.Socket, ptp.SubscribeConfig{Domain: uint8(c.Domain), Duration: c.SubscribeDuration, Timeout: c.Timeout, Dir: runtimeDir}),
		states: map[protocol.PortIdentity]protocol.PortState{}, times: map[string]*record.SeriesTime{},
	}
}

// Produce subscribes and queues what ptp4l pushes until ctx is done. A
// failure (ptp4l restarted or away) ends it and the event source subscribes
// again after its back-off; a refusal is kept: Produce then waits for the
// end without asking again.
func (d *ptp4lPush) Produce(ctx context.Context, q *collect.EventQueue[ptp.Notification]) error {
	if d.refused.Load() {
		<-ctx.Done()
		return nil
	}
	err := d.sub.Run(ctx, func(n *ptp.Notification) {
		if l := d.sub.Lost.Load(); l != d.lost {
			q.Lost(l - d.lost)
			d.lost = l
		}
		q.Put1(*n)
	})
	if errors.Is(err, ptp.ErrSubscriptionRefused) {
		d.refused.Store(true)
		return fmt.Errorf("%w; port states are polled at ptp.ptp4l.interval only", err)
	}
	return err
}

// seriesTime is the SeriesTime of one measurement and port.
func (d *ptp4lPush) seriesTime(key string) *record.SeriesTime {
	st := d.times[key]
	if st == nil {
		st = &record.SeriesTime{}
		d.times[key] = st
	}
	return st
}

// Emit ships one pushed dataset at the time it was read (REALTIME: ptp4l
// sends it as the event happens and stamps nothing); two read in the same
// nanosecond (never seen) would be kept apart by one (time_bumps).
func (d *ptp4lPush) Emit(b *collect.Batch, n *ptp.Notification) {
	switch n.ID {
	case protocol.IDPortDataSet:
		p := n.Port
		from, known := d.states[p.PortIdentity]
		d.states[p.PortIdentity] = p.PortState
		if n.Baseline {
			return
		}
		d.events++
		port := p.PortIdentity.String()
		f := []record.Field{record.String("state", p.PortState.String()), record.Int("state_code", int64(p.PortState)),
			record.Uint("sequence", uint64(n.Seq))}
		if known {
			f = append(f, record.String("from_state", from.String()), record.Int("from_state_code", int64(from)))
		}
		b.Add("ptp4l_port_event", d.seriesTime("port/"+port).Next(n.ReadNS, &d.bumps), withTags(d.tags, record.Tag{Key: "port", Value: port}), f...)
	case ptp.IDTimeStatusNP:
		d.events++
		b.Add("ptp4l_time_sync", d.seriesTime("time").Next(n.ReadNS, &d.bumps), d.tags, timeStatusFields(&n.TimeStatus, record.Uint("sequence", uint64(n.Seq)))...)
	case protocol.IDParentDataSet:
		d.events++
		b.Add("ptp4l_parent_event", d.seriesTime("parent").Next(n.ReadNS, &d.bumps), d.tags, parentFields(&n.Parent, record.Uint("sequence", uint64(n.Seq)))...)
	}
}

// Self is the subscriber's counts beside the event source's.
func (d *ptp4lPush) Self() []record.Field {
	return []record.Field{
		record.Bool("subscription_refused", d.refused.Load()), record.Uint("subscriptions", d.sub.Subscriptions.Load()),
		record.Uint("notifications", d.sub.Notifications.Load()), record.Uint("notifications_lost", d.sub.Lost.Load()),
		record.Uint("undecodable", d.sub.Undecodable.Load()), record.Uint("time_bumps", d.bumps),
	}
}
