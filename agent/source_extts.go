package agent

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// exttsReader is what the extts source needs of an enabled PHC (*phc.Extts):
// batched reads of decoded stamps, the reader's counters, and closing (which
// disables the channels again).
type exttsReader interface {
	Read(ctx context.Context, dst []phc.ExttsEvent) (int, error)
	Stats() phc.ExttsStats
	Close() error
}

var _ exttsReader = (*phc.Extts)(nil)

// exttsBatch is the most events one read takes (the kernel returns at most
// phc.KernelExttsPerRead).
const exttsBatch = 64

// exttsStamp is one stamp as the reader hands it to the shipper.
type exttsStamp struct {
	ev phc.ExttsEvent
	// readRT is REALTIME at the read that brought it plus its index in the
	// read: the time of a stamp that cannot be moved to REALTIME yet.
	readRT int64
	read   int64 // REALTIME at that read
}

// exttsChan is one configured channel: its request, tags and counts.
type exttsChan struct {
	req  phc.ExttsChannel
	tags map[phc.Edge][]record.Tag // by the edge tag's value: rising, falling, unknown

	// Written on the collection goroutine only.
	times  record.SeriesTime // no two records of the channel share a time
	events uint64
	lat    collect.Latency // stamp (moved to REALTIME) -> the read that brought it
}

// exttsSource is the decoder of one PHC's extts event source.
type exttsSource struct {
	dom   timebase.Domain
	toRT  *timebase.Route // the collection goroutine's
	chans []*exttsChan
	open  func() (exttsReader, error)

	// The reader's counters over every open (the producer adds to them).
	totals phc.ExttsTotals

	// Written on the collection goroutine only.
	untranslated, bumps, unlisted uint64
	scratch                       [collect.LatencyCap]int64
}

func buildExttsSources(env *Env) ([]collect.Source, error) {
	c := env.Config
	x := c.Extts
	dom, err := phcOf(env, "extts.phc", x.PHC, "extts", "every stamp will count as untranslated")
	if err != nil {
		return nil, err
	}
	tr := env.translators()
	d := newExttsSource(x, dom, tr, nil)
	s, err := collect.Decode("extts:"+x.PHC, x.Interval, x.Ring, d)
	if err != nil {
		return nil, keyErr("extts", "%v", err)
	}
	return []collect.Source{s}, nil
}

// newExttsSource reads the channels of x.PHC, whose time is dom; open, when
// not nil, replaces enabling them on the device (tests).
func newExttsSource(x ExttsConfig, dom timebase.Domain, tr *timebase.Translators, open func() (exttsReader, error)) *exttsSource {
	d := &exttsSource{dom: dom, toRT: tr.Route(dom, timebase.DomainRealtime), open: open}
	reqs := make([]phc.ExttsChannel, len(x.Channels))
	for i, c := range x.Channels {
		reqs[i] = c.request()
		ch := &exttsChan{req: reqs[i], tags: map[phc.Edge][]record.Tag{}}
		for _, e := range []phc.Edge{phc.EdgeRising, phc.EdgeFalling, 0} {
			ch.tags[e] = []record.Tag{{Key: "phc", Value: x.PHC}, {Key: "channel", Value: fmt.Sprint(c.Channel)},
				{Key: "name", Value: c.tagName()}, {Key: "edge", Value: e.String()}}
		}
		d.chans = append(d.chans, ch)
	}
	if d.open == nil {
		d.open = func() (exttsReader, error) { return phc.OpenExtts(x.PHC, reqs...) }
	}
	return d
}

// Produce enables the channels and drains the stamps into the queue until
// ctx is done; a failure ends it (the event source counts it, backs off and
// calls it again, which enables the channels again). The edges missing
// between two stamps of a channel with a period are the losses counted: the
// kernel keeps no drop counter of its extts queue (see phc.ExttsStats).
func (d *exttsSource) Produce(ctx context.Context, q *collect.EventQueue[exttsStamp]) error {
	return collect.Use(d.open, func(rd exttsReader) error {
		var evs [exttsBatch]phc.ExttsEvent
		var batch [exttsBatch]exttsStamp
		var prev phc.ExttsStats
		for {
			n, err := rd.Read(ctx, evs[:])
			if n > 0 {
				readRT := timebase.RealtimeNS()
				for i := range evs[:n] {
					batch[i] = exttsStamp{ev: evs[i], readRT: readRT + int64(i), read: readRT}
				}
				q.Put(batch[:n])
			}
			st := rd.Stats()
			if m := d.totals.Add(prev, st); m > 0 {
				q.Lost(m)
			}
			prev = st
			if err != nil {
				return collect.Ended(ctx, err) // the reader's errors name the device
			}
		}
	})
}

// channel is the configured channel ch, or nil.
func (d *exttsSource) channel(ch uint32) *exttsChan {
	for _, c := range d.chans {
		if uint32(c.req.Channel) == ch {
			return c
		}
	}
	return nil
}

// Emit ships one stamp at its PHC time moved to REALTIME through the phc
// source's model, with the model's uncertainty. A stamp that cannot be moved
// yet (no model) is shipped at REALTIME of the read that brought it plus its
// index in the read, with phc_ns kept, and counted (untranslated). Two stamps
// of a channel never share a time: a time not after the channel's previous
// one is moved to 1 ns after it and counted (time_bumps). Stamps of channels
// not configured (another reader's, where open files share the queue) are
// counted as unlisted, not shipped.
func (d *exttsSource) Emit(b *collect.Batch, e *exttsStamp) {
	c := d.channel(e.ev.Channel)
	if c == nil {
		d.unlisted++
		return
	}
	c.events++
	dom := e.ev.Domain
	if dom == timebase.DomainUnknown {
		dom = d.dom
	}
	f := make([]record.Field, 1, 2)
	f[0] = record.Int("phc_ns", e.ev.PHCNS)
	var t int64
	if rt, err := d.toRT.Move(timebase.Timestamp{NS: e.ev.PHCNS, Domain: dom}); err == nil {
		t = rt.NS
		f = append(f, record.Int("uncertainty_ns", rt.UncertaintyNS))
		c.lat.Add(e.read - rt.NS)
	} else {
		t = e.readRT
		d.untranslated++
	}
	t = c.times.Next(t, &d.bumps)
	b.Add("extts_event", t, c.tags[c.req.EdgeOf(&e.ev)], f...)
}

// Self is the decoder's counts beside the event source's.
func (d *exttsSource) Self() []record.Field {
	st := d.totals.Stats()
	f := []record.Field{
		record.Uint("untranslated", d.untranslated), record.Uint("time_bumps", d.bumps),
		record.Uint("unlisted", d.unlisted), record.Uint("missed_edges", st.MissedEdges),
		record.Uint("full_reads", st.FullReads), record.Uint("backwards", st.Backwards),
		record.Uint("other_channels", st.OtherChannels),
	}
	for _, c := range d.chans {
		pfx := fmt.Sprintf("channel%d_", c.req.Channel)
		f = append(f, record.Uint(pfx+"events", c.events))
		f = c.lat.Fields(f, pfx)
	}
	return f
}

// After closes the interval's read-latency statistics of each channel.
func (d *exttsSource) After(b *collect.Batch, events int) error {
	for _, c := range d.chans {
		c.lat.Close(&d.scratch)
	}
	return nil
}

// exttsSection is the extts section's entry in the table (config.go).
var exttsSection = section{key: "extts", of: func(c *Config) sectionConfig { return &c.Extts },
	sources: []sourceKind{{"extts", func(c *Config) bool { return c.Extts.Enabled }, buildExttsSources}},
	memory: []memoryUse{{what: "external timestamps", bytes: exttsEventBytes, size: func() uintptr { return unsafe.Sizeof(exttsStamp{}) },
		buffers: func(c *Config) []buffer { return oneBuffer(c.Extts.Enabled, "extts.ring", c.Extts.Ring) }}}}

// exttsEventBytes is a ring entry's budget (the memory check).
const exttsEventBytes = 40
