package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"unsafe"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// gpioEdge is one edge as the reader hands it to the shipper.
type gpioEdge struct {
	ev gpio.Event
	// read is the event clock's time when the read that brought the edge
	// returned (its latency is read - ev.TimestampNS).
	read int64
	// readRT is REALTIME at that read plus the edge's index in it: the time
	// of an edge whose stamp cannot be moved to REALTIME yet.
	readRT int64
}

// gpioFields is the most fields of a gpio_event record.
const gpioFields = 10

// gpioLine is one requested line: its tags and counts.
type gpioLine struct {
	offset   uint32
	tags     collect.HostTags // chip, line, name, edge (edgeTags)
	fieldPfx string           // "line17_"

	lost atomic.Uint64 // line_seqno gaps (the producer writes it)

	triggers []*gpioTrigger // gpio.triggers rules of this line (collection goroutine)

	// Written on the collection goroutine only.
	times  record.SeriesTime // no two records of the line share a time
	events uint64
	lat    collect.Latency
}

// gpioSource is the decoder of one line request's event source (or of one
// replayed capture).
type gpioSource struct {
	chip    string // as configured (the chip tag)
	path    string // the device
	replay  string
	offsets []int
	cfg     gpio.LineConfig
	buffer  int
	clock   timebase.SystemClock // the event clock, for the read latency
	tr      *timebase.Translators
	phc     timebase.Domain // DomainUnknown: no phc_ns
	// Routes from the event clock to REALTIME and to the PHC (the
	// collection goroutine's: they keep model copies between stamps).
	toRT, toPHC *timebase.Route
	// The global timeline (nil without the hca section) and the route
	// from the event clock to its MONOTONIC_RAW.
	global *hca.Global
	toRaw  *timebase.Route
	lines  []*gpioLine
	irqs   *gpio.IRQAccount // the lines' IRQ counts (nil for a replay)

	replayDone atomic.Bool
	unlisted   atomic.Uint64 // replayed edges of lines not configured
	unlost     atomic.Uint64 // their losses

	// Written on the collection goroutine only (Emit, After, Self).
	untranslated, phcUntranslated, bumps, unplaced uint64
	slab                                           collect.Slab // the edges' fields (gpioFields, slabRecords)
	scratch                                        [collect.LatencyCap]int64
}

func buildGPIOSources(env *Env) ([]collect.Source, error) {
	c := env.Config
	phcDom := timebase.DomainUnknown
	if c.GPIO.PHC != "" {
		var err error
		if phcDom, err = phcOf(env, "gpio.phc", c.GPIO.PHC, "gpio.phc", "every edge will count as phc_untranslated"); err != nil {
			return nil, err
		}
	}
	tr := env.translators()
	return buildEach("gpio.chips", c.GPIO.Chips, func(cc GPIOChipConfig) (out []collect.Source, err error) {
		for _, group := range groupGPIOLines(cc) {
			name := "gpio:" + cc.Chip
			if len(group) != len(cc.Lines) {
				name += ":" + offsetsString(group)
			}
			d, err := newGPIOSource(cc, group, gpio.DevicePath(c.Paths.Dev, cc.Chip), tr, phcDom)
			if err != nil {
				return out, err
			}
			d.global = env.Global
			d.attachTriggers(c.GPIO.Triggers, sensors.NewFS(c.Paths.Sys, c.Paths.Dev), env.Log)
			s, err := collect.Decode(name, c.GPIO.Interval, cc.Ring, d)
			if err != nil {
				return out, err
			}
			out = append(out, s)
		}
		return out, nil
	})
}

func newGPIOSource(cc GPIOChipConfig, lines []GPIOLineConfig, path string, tr *timebase.Translators, phcDom timebase.Domain) (*gpioSource, error) {
	cfg := lines[0].lineConfig()
	cfg.EventBufferSize = cc.Buffer
	cfg.Consumer = gpio.Consumer(path)
	clk, ok := timebase.SystemClockFor(cfg.Clock.Domain())
	if !ok {
		return nil, fmt.Errorf("gpio %s: event clock %s has no system clock", path, cfg.Clock)
	}
	d := &gpioSource{chip: cc.Chip, path: path, replay: cc.Replay, cfg: cfg, buffer: cc.Buffer,
		clock: clk, tr: tr, phc: phcDom, slab: collect.NewSlab(gpioFields, slabRecords),
		toRT: tr.Route(cfg.Clock.Domain(), timebase.DomainRealtime), toPHC: tr.Route(cfg.Clock.Domain(), phcDom),
		toRaw: tr.Route(cfg.Clock.Domain(), timebase.DomainMonotonicRaw)}
	for _, l := range lines {
		d.offsets = append(d.offsets, l.Offset)
		d.lines = append(d.lines, &gpioLine{offset: uint32(l.Offset), fieldPfx: "line" + strconv.Itoa(l.Offset) + "_",
			tags: edgeTags(record.Tag{Key: "chip", Value: cc.Chip}, record.Tag{Key: "line", Value: strconv.Itoa(l.Offset)}, record.Tag{Key: "name", Value: l.tagName()})})
	}
	// A debounced line's IRQ fires on every bounce (gpiolib-cdev's software
	// debounce takes both edges), so its IRQs are no count of its edges.
	if d.replay == "" && cfg.Debounce == 0 {
		d.irqs = gpio.NewIRQAccount(cfg.Consumer, d.offsets)
	}
	return d, nil
}

// line is the configured line at offset, or nil.
func (d *gpioSource) line(offset uint32) *gpioLine {
	for _, l := range d.lines {
		if l.offset == offset {
			return l
		}
	}
	return nil
}

// open requests the lines, or opens the replayed capture.
func (d *gpioSource) open() (*gpio.Reader, error) {
	if d.replay != "" {
		return gpio.OpenReplay(d.replay, d.chip, d.cfg.Clock, d.buffer)
	}
	return gpio.OpenLines(d.path, d.offsets, d.cfg, d.buffer)
}

// Produce drains the request into the queue until ctx is done; a failure
// ends it (the event source counts it, backs off and calls it again, which
// requests the lines again). A replay is read once: at its end (or at a
// malformed record) the producer idles until ctx is done.
func (d *gpioSource) Produce(ctx context.Context, q *collect.EventQueue[gpioEdge]) error {
	if d.replay != "" && d.replayDone.Load() {
		<-ctx.Done()
		return nil
	}
	rd, err := d.open()
	if err != nil {
		return err
	}
	defer rd.Close()
	if d.irqs != nil {
		d.irqs.Start()
		defer d.irqs.Stop()
	}
	evs := make([]gpio.Event, d.buffer)
	batch := make([]gpioEdge, d.buffer)
	pace := collect.Pacer{Capacity: min(d.buffer, gpio.MaxEventBufferSize)}
	for {
		n, lost, err := rd.Read(ctx, evs)
		// Fewer events than asked for: the read emptied the kernel's queue.
		drained := err == nil && n < min(d.buffer, gpio.MaxEventBufferSize)
		if n > 0 {
			readEv, _ := d.clock.Now() // a system clock every Linux kernel has (checked when built): clock_gettime cannot fail; 0 would only lose the latency figure
			readRT := timebase.RealtimeNS()
			for i := range evs[:n] {
				batch[i] = gpioEdge{ev: evs[i], read: readEv, readRT: readRT + int64(i)}
			}
			q.Put(batch[:n])
			if d.irqs != nil {
				d.irqs.Queued(rd.Loss(), drained)
			}
		}
		if lost > 0 {
			q.Lost(lost)
			rd.Loss().NewLosses(func(offset uint32, n uint64) {
				if line := d.line(offset); line != nil {
					line.lost.Add(n)
				} else {
					d.unlost.Add(n)
				}
			})
		}
		if err == nil {
			pace.Pause(ctx, n, drained) // the next read takes a batch
			continue
		}
		if ctx.Err() != nil {
			return nil
		}
		if d.replay != "" {
			d.replayDone.Store(true)
			if errors.Is(err, io.EOF) {
				<-ctx.Done()
				return nil
			}
		}
		return err
	}
}

// Emit ships one edge at its kernel stamp moved to REALTIME (place). An
// edge of a line that is not configured (only a replay has them) is counted
// as unlisted, not shipped.
func (d *gpioSource) Emit(b *collect.Batch, e *gpioEdge) {
	l, t, unc, ok := d.place(e)
	if l == nil {
		return
	}
	// The fields come from a slab shared by many records (one allocation
	// per slabRecords edges); records keep their part of it until shipped.
	f := append(d.slab.Next(), record.Int("kernel_ns", e.ev.TimestampNS), record.String("clock", e.ev.Clock.String()),
		record.Uint("seqno", uint64(e.ev.Seqno)), record.Uint("line_seqno", uint64(e.ev.LineSeqno)))
	if ok {
		f = append(f, record.Int("uncertainty_ns", unc))
	}
	if d.phc != timebase.DomainUnknown {
		ts := timebase.Timestamp{NS: e.ev.TimestampNS, Domain: e.ev.Domain()}
		if p, err := d.toPHC.Move(ts); err == nil {
			f = append(f, record.Int("phc_ns", p.NS), record.Int("phc_uncertainty_ns", p.UncertaintyNS))
		} else {
			d.phcUntranslated++
		}
	}
	if d.global != nil {
		var placed bool
		if f, placed = appendGlobal(d.global, f, d.toRaw, timebase.Timestamp{NS: e.ev.TimestampNS, Domain: e.ev.Domain()}); !placed {
			d.unplaced++
		}
	}
	b.Records = append(b.Records, record.Record{Measurement: "gpio_event", Tags: l.tags.Of(b.Host, edgeIndex(e.ev.Edge)), Fields: d.slab.Keep(f), TimeNS: t})
	for _, tr := range l.triggers {
		tr.fire(b, e, t)
	}
}

// edgeTags are the tags of a series' records per edge (edgeIndex): base
// and the edge tag, rising or falling.
func edgeTags(base ...record.Tag) collect.HostTags {
	return collect.NewHostTags(base, "edge", "rising", "falling")
}

// edgeIndex is the edgeTags variant of an edge of kind e.
func edgeIndex(e gpio.Edge) int {
	if e == gpio.EdgeFalling {
		return 1
	}
	return 0
}

// place accounts one edge to its line (events, read latency) and returns
// the line and the edge's record time: its kernel stamp moved to REALTIME
// with the model's uncertainty (ok). An edge whose stamp cannot be moved yet
// (no clock model) gets REALTIME of the read that brought it plus its index
// in the read (!ok, counted as untranslated). Two edges of a line never
// share a time: a time not after the line's previous one is moved to 1 ns
// after it, and counted (time_bumps). It does not allocate.
func (d *gpioSource) place(e *gpioEdge) (l *gpioLine, t, unc int64, ok bool) {
	if l = d.line(e.ev.Offset); l == nil {
		d.unlisted.Add(1)
		return nil, 0, 0, false
	}
	l.events++
	l.lat.Add(e.read - e.ev.TimestampNS)

	// A REALTIME stamp stays as it is (uncertainty 0); the route does not
	// allocate when the models exist.
	rt, err := d.toRT.Move(timebase.Timestamp{NS: e.ev.TimestampNS, Domain: e.ev.Domain()})
	t, unc, ok = rt.NS, rt.UncertaintyNS, err == nil
	if !ok {
		t = e.readRT
		d.untranslated++
	}
	t = l.times.Next(t, &d.bumps)
	return l, t, unc, ok
}

// After closes the interval's latency statistics of every line that had
// edges in it; a line without edges keeps those of its last interval with
// edges (latency_samples says how many edges they cover), so that the
// self-metrics shipped less often than the edges still show them.
func (d *gpioSource) After(b *collect.Batch, events int) error {
	if d.irqs != nil {
		d.irqs.Check()
	}
	for _, l := range d.lines {
		l.lat.Close(&d.scratch)
	}
	return nil
}

// Self is the decoder's counts beside the event source's: per line, its
// edges, the kernel's drops (line_seqno gaps) and the read latency (kernel
// stamp -> user space) over the last interval with edges (see after).
func (d *gpioSource) Self() []record.Field {
	f := []record.Field{
		record.Uint("untranslated", d.untranslated), record.Uint("time_bumps", d.bumps),
		record.Uint("unlisted", d.unlisted.Load()), record.Uint("unlisted_lost", d.unlost.Load()),
	}
	if d.phc != timebase.DomainUnknown {
		f = append(f, record.Uint("phc_untranslated", d.phcUntranslated))
	}
	if d.global != nil {
		f = append(f, record.Uint("unplaced", d.unplaced))
	}
	if d.irqs != nil {
		if why := d.irqs.Why(); why != "" {
			f = append(f, record.String("irqs_unavailable", why))
		}
	}
	for _, l := range d.lines {
		f = append(f, record.Uint(l.fieldPfx+"events", l.events), record.Uint(l.fieldPfx+"lost", l.lost.Load()))
		f = l.lat.Fields(f, l.fieldPfx)
		if d.irqs != nil {
			if irqs, merged, ok := d.irqs.Counts(int(l.offset)); ok {
				f = append(f, record.Uint(l.fieldPfx+"irqs", irqs), record.Uint(l.fieldPfx+"merged", merged))
			}
		}
		for _, tr := range l.triggers {
			f = tr.self(f)
		}
	}
	return f
}

// gpioSection is the gpio section's entry in the table (config.go).
var gpioSection = section{key: "gpio", of: func(c *Config) sectionConfig { return &c.GPIO },
	sources: []sourceKind{{"gpio", func(c *Config) bool { return c.GPIO.Enabled }, buildGPIOSources}},
	memory: []memoryUse{{what: "edges", bytes: gpioEventBytes, size: func() uintptr { return unsafe.Sizeof(gpioEdge{}) },
		buffers: func(c *Config) []buffer {
			if !c.GPIO.Enabled {
				return nil
			}
			return rings("gpio.chips", c.GPIO.Chips, func(ch GPIOChipConfig) int { return ch.Ring })
		}}}}

// gpioEventBytes is a ring entry's budget (the memory check).
const gpioEventBytes = 40
