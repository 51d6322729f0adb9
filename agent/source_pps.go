package agent

import (
	"context"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// ppsFetcher is what the PPS source needs of a device (*gpio.PPSDevice):
// Fetch waits for new edges and says, per edge kind, which are new and how
// many were lost before them.
type ppsFetcher interface {
	Fetch(ctx context.Context) (gpio.PPSEvent, uint64, error)
	Close() error
}

var _ ppsFetcher = (*gpio.PPSDevice)(nil)

// ppsEdge is one new PPS edge as the reader hands it to the shipper.
type ppsEdge struct {
	ns    int64  // the kernel's stamp, REALTIME
	read  int64  // REALTIME when the fetch that brought it returned
	seq   uint32 // its sequence number
	clear bool   // a clear edge (else assert)
}

// ppsSource is the decoder of one PPS device's event source.
type ppsSource struct {
	path string
	ship [2]bool         // assert, clear: the kinds shipped
	tags [2][]record.Tag // assert, clear: device, name, edge
	open func() (ppsFetcher, error)

	judged  *judgement // the system clock against the assert edges (pps.judge), or nil
	latency int64      // pps.latency, ns

	lost    [2]atomic.Uint64 // sequence gaps of the shipped kinds (producer)
	ignored atomic.Uint64    // new edges of a kind not shipped (producer)

	// Written on the collection goroutine only.
	times   [2]record.SeriesTime // per edge kind: no two records share a time
	events  [2]uint64
	bumps   uint64
	lat     [2]collect.Latency // per edge kind: kernel stamp -> fetch returned
	scratch [collect.LatencyCap]int64
}

func buildPPSSources(env *Env) ([]collect.Source, error) {
	c := env.Config
	return buildEach("pps.devices", c.PPS.Devices, func(dc PPSDeviceConfig) ([]collect.Source, error) {
		d := newPPSSource(dc, gpio.DevicePath(c.Paths.Dev, dc.Device), nil)
		if err := d.judge(env.judges, c.PPS); err != nil {
			return nil, err
		}
		s, err := collect.Decode("pps:"+dc.tagName(), c.PPS.Interval, dc.Ring, d)
		if err == nil {
			// The judge's events_lost: assert edges the kernel lost, and
			// edges the ring could not hold.
			d.judged.CountLost(func() uint64 { return d.lost[0].Load() + s.RingDropped() })
		}
		return one(s, err)
	})
}

// judge registers the system clock's judge against the device's assert
// edges (pps.judge); three seconds without an edge lose the reference.
func (d *ppsSource) judge(g *judging.Judges, c PPSConfig) (err error) {
	if !d.ship[0] {
		return nil // no assert edges to judge by
	}
	d.latency = int64(c.Latency)
	if d.judged, err = g.Add("system", "pps:"+d.tags[0][1].Value, c.Judge, 3*time.Second); err != nil {
		return keyErr("pps.judge", "%v", err)
	}
	return nil
}

// newPPSSource reads the device at path; open, when not nil, replaces
// opening it (tests).
func newPPSSource(dc PPSDeviceConfig, path string, open func() (ppsFetcher, error)) *ppsSource {
	d := &ppsSource{path: path, ship: [2]bool{dc.Assert, dc.Clear}, open: open}
	if d.open == nil {
		cfg := gpio.PPSConfig{Assert: dc.Assert, Clear: dc.Clear}
		d.open = func() (ppsFetcher, error) { return gpio.OpenPPS(path, cfg) }
	}
	for i, edge := range []string{"assert", "clear"} {
		d.tags[i] = []record.Tag{{Key: "device", Value: path}, {Key: "name", Value: dc.tagName()}, {Key: "edge", Value: edge}}
	}
	return d
}

// Produce fetches edges until ctx is done and queues each new edge of the
// kinds shipped; the sequence gaps of those kinds are the kernel's losses
// (the device keeps only its latest edge of each kind). A failure ends it:
// the event source counts it, backs off and opens the device again (a new
// baseline: edges between the two opens are not counted).
func (d *ppsSource) Produce(ctx context.Context, q *collect.EventQueue[ppsEdge]) error {
	return collect.Use(d.open, func(dev ppsFetcher) error {
		for {
			e, _, err := dev.Fetch(ctx)
			if err != nil {
				return collect.Ended(ctx, err) // Fetch's errors name the device
			}
			read := timebase.RealtimeNS()
			for k, x := range e.Edges() {
				switch {
				case !d.ship[k]:
					if x.New {
						d.ignored.Add(1)
					}
				case x.New:
					if x.Lost > 0 {
						q.Lost(x.Lost)
						d.lost[k].Add(x.Lost)
					}
					q.Put1(ppsEdge{ns: x.NS, read: read, seq: x.Seq, clear: k == 1})
				}
			}
		}
	})
}

// Emit ships one edge at its stamp (REALTIME). Two edges of one kind never
// share a time: a stamp not after the kind's previous one (a stale fetch,
// a clock step back) is moved to 1 ns after it and counted (time_bumps).
func (d *ppsSource) Emit(b *collect.Batch, e *ppsEdge) {
	k := 0
	if e.clear {
		k = 1
	}
	d.events[k]++
	d.lat[k].Add(e.read - e.ns)
	t := d.times[k].Next(e.ns, &d.bumps)
	b.Add("pps_event", t, d.tags[k], record.Uint("sequence", uint64(e.seq)), record.Int("kernel_ns", e.ns))
	if k == 0 && d.judged != nil {
		// The edge starts a UTC second: the clock is off by the stamp's
		// distance to the nearest second (a PPS cannot see whole seconds),
		// and the pulse came up to latency before its stamp.
		off := (e.ns%1e9+1.5e9)%1e9 - 0.5e9
		// Judged at its own stamp, not the record's time: after a step of
		// REALTIME back the records are moved past the last one, but the
		// judge places the stamp on its steady clock (judge.Timeline).
		d.judged.Observe(b, judge.Sample{TimeNS: e.ns, Synced: true, OffsetNS: off, BoundNS: judge.Sum(judge.Abs(off), d.latency), FreqErrPPB: -1})
	}
}

// Self is the decoder's counts beside the event source's.
func (d *ppsSource) Self() []record.Field {
	f := []record.Field{
		record.Uint("assert_events", d.events[0]), record.Uint("assert_lost", d.lost[0].Load()),
		record.Uint("clear_events", d.events[1]), record.Uint("clear_lost", d.lost[1].Load()),
		record.Uint("ignored_edges", d.ignored.Load()), record.Uint("time_bumps", d.bumps),
	}
	if d.ship[0] {
		f = d.lat[0].Fields(f, "assert_")
	}
	if d.ship[1] {
		f = d.lat[1].Fields(f, "clear_")
	}
	return f
}

// After closes the interval's read-latency statistics of each edge kind.
func (d *ppsSource) After(b *collect.Batch, events int) error {
	d.lat[0].Close(&d.scratch)
	d.lat[1].Close(&d.scratch)
	return nil
}

// ppsSection is the pps section's entry in the table (config.go).
var ppsSection = section{key: "pps", of: func(c *Config) sectionConfig { return &c.PPS },
	sources: []sourceKind{{"pps", func(c *Config) bool { return c.PPS.Enabled }, buildPPSSources}},
	memory: []memoryUse{{what: "edges", bytes: ppsEventBytes, size: func() uintptr { return unsafe.Sizeof(ppsEdge{}) },
		buffers: func(c *Config) []buffer {
			if !c.PPS.Enabled {
				return nil
			}
			return rings("pps.devices", c.PPS.Devices, func(d PPSDeviceConfig) int { return d.Ring })
		}}}}

// ppsEventBytes is a ring entry's budget (the memory check).
const ppsEventBytes = 24
