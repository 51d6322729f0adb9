package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"unsafe"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// markerEvent is one marker as the reader hands it to the shipper.
type markerEvent struct {
	m       marker.Marker
	arrival int64 // REALTIME: the kernel's stamp of the datagram, else its read
}

// markerSource is the decoder of the application-marker event source.
type markerSource struct {
	log  *slog.Logger
	toRT *timebase.Route // MONOTONIC -> REALTIME (collection goroutine)
	// The global timeline (nil without the hca section) and the routes to
	// its MONOTONIC_RAW (collection goroutine).
	global         *hca.Global
	rtRaw, monoRaw *timebase.Route

	// The socket's reader: bound by newMarkerSource, again by the producer
	// after a read failure closed it, closed by Close (after Run
	// returned); its counts are anyone's.
	r *marker.Reader

	// Written on the collection goroutine only.
	series       *marker.SeriesTable[record.SeriesTime] // the times of each series
	times        record.TimeCounts
	untranslated uint64
	unplaced     uint64
	events       uint64
}

func buildMarkerSource(env *Env) ([]collect.Source, error) {
	c := env.Config.Marker
	mode, err := c.fileMode()
	if err != nil {
		return nil, keyErr("marker.mode", "%v", err)
	}
	tr := env.translators()
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, err := newMarkerSource(c.path(env.Config.Paths), mode, c.MaxSeries, tr, log)
	if err != nil {
		return nil, &KeyError{Key: "marker.socket", Reason: err.Error(), Err: err}
	}
	d.global = env.Global
	s, err := collect.Decode("marker", c.Interval, c.Ring, d)
	if err != nil {
		d.r.Close()
		return nil, keyErr("marker", "%v", err)
	}
	return []collect.Source{s}, nil
}

// newMarkerSource binds the socket at path.
func newMarkerSource(path string, mode os.FileMode, maxSeries int, tr *timebase.Translators, log *slog.Logger) (*markerSource, error) {
	d := &markerSource{r: marker.NewReader(path, mode), log: log,
		toRT:    tr.Route(timebase.DomainMonotonic, timebase.DomainRealtime),
		rtRaw:   tr.Route(timebase.DomainRealtime, timebase.DomainMonotonicRaw),
		monoRaw: tr.Route(timebase.DomainMonotonic, timebase.DomainMonotonicRaw),
		series:  marker.NewSeriesTable[record.SeriesTime](maxSeries)}
	if err := d.listen(); err != nil {
		return nil, err
	}
	return d, nil
}

// Close closes the socket.
func (d *markerSource) Close() error { return d.r.Close() }

// listen binds the socket (marker.Reader.Listen).
func (d *markerSource) listen() error {
	if err := d.r.Listen(); err != nil {
		return err
	}
	d.log.Debug("marker socket", "path", d.r.Path(), "mode", fmt.Sprintf("%04o", d.r.Mode()), "kernel_stamps", d.r.Stamps())
	return nil
}

// Produce reads datagrams until ctx is done: each is stamped, parsed and
// queued; a malformed one is dropped and counted (marker.Reader). A read
// failure closes the socket and ends it; the event source backs off and
// calls it again, and it binds the socket again.
func (d *markerSource) Produce(ctx context.Context, q *collect.EventQueue[markerEvent]) error {
	if !d.r.Listening() {
		if err := d.listen(); err != nil {
			return err
		}
	}
	for {
		m, arrival, err := d.r.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, marker.ErrSyntax) {
			if d.r.Malformed() == 1 {
				d.log.Warn("malformed marker dropped (the next are only counted)", "socket", d.r.Path(), "err", err)
			}
			continue
		}
		if err != nil {
			return err // the socket is closed: bound again on the next run
		}
		q.Put1(markerEvent{m: m, arrival: arrival})
	}
}

// Emit ships one marker at its time: the sender's stamp (REALTIME as it is,
// MONOTONIC moved to REALTIME through the clock models), else its arrival.
// With the hca section, that time is also placed on the global timeline
// (hca_local_ns, global_ns, global_bound_ns; unplaced counts the markers
// before the first model), unless the sender stamped it there itself from
// the time API (global= and global_bound=: global_ns and global_bound_ns
// as it read them, global_stamp=sender); a sender's stamp of the system
// section (utc=, utc_bound=) is shipped as utc_ns and utc_bound_ns.
// Markers of one series (name and tags) never share a time: one with a
// time its series already has moves to the first free nanosecond after it
// (record.SeriesTime, counted in time_bumps; time_unchecked counts those it could
// not check); markers of a series beyond max_series are dropped.
func (d *markerSource) Emit(b *collect.Batch, e *markerEvent) {
	m := &e.m
	st := d.series.Get(m)
	if st == nil {
		return
	}
	d.events++
	when := m.When(e.arrival)
	t, route := when.NS, d.rtRaw
	f := make([]record.Field, 0, 10)
	if m.HasValue {
		f = append(f, record.Float("value", m.Value))
	}
	f = append(f, record.Int("arrival_ns", e.arrival))
	if m.Clock != marker.ClockNone {
		f = append(f, record.Int("sender_ns", m.StampNS), record.String("sender_clock", m.Clock.String()))
	}
	if when.Domain == timebase.DomainMonotonic {
		route = d.monoRaw
		if rt, err := d.toRT.Move(when); err == nil {
			t = rt.NS
			f = append(f, record.Int("uncertainty_ns", rt.UncertaintyNS))
		} else {
			t = e.arrival
			d.untranslated++
		}
	}
	switch m.True {
	case marker.TrueSystem:
		f = append(f, record.Int("utc_ns", m.TrueNS), record.Int("utc_bound_ns", m.TrueBoundNS))
	case marker.TrueGlobal:
		// The sender's own read of the global timeline at the event: it
		// stands for the agent's placement of the marker's stamp.
		f = append(f, record.Int("global_ns", m.TrueNS), record.Int("global_bound_ns", m.TrueBoundNS), record.String("global_stamp", "sender"))
	}
	if d.global != nil && m.True != marker.TrueGlobal {
		var placed bool
		if f, placed = appendGlobal(d.global, f, route, when); !placed {
			d.unplaced++
		}
	}
	tags := make([]record.Tag, 0, 1+m.NumTags)
	tags = append(tags, record.Tag{Key: "name", Value: m.Name})
	for _, tg := range m.TagList() {
		tags = append(tags, record.Tag{Key: tg.Key, Value: tg.Value})
	}
	b.Add("marker", st.Place(t, &d.times), tags, f...)
}

// Self is the decoder's counts beside the event source's.
func (d *markerSource) Self() []record.Field {
	f := []record.Field{
		record.Uint("markers", d.events),
		record.Uint("malformed", d.r.Malformed()),
		record.Uint("kernel_stamped", d.r.KernelStamped()),
		record.Uint("read_stamped", d.r.ReadStamped()),
		record.Uint("untranslated", d.untranslated),
		record.Uint("unplaced", d.unplaced),
		record.Uint("time_bumps", d.times.Bumps),
		record.Uint("time_unchecked", d.times.Unchecked),
		record.Uint("series", uint64(d.series.Len())),
		record.Uint("series_dropped", d.series.Dropped()),
	}
	if e := d.r.LastMalformed(); e != "" {
		f = append(f, record.String("malformed_last_error", e))
	}
	return f
}

// markerSection is the marker section's entry in the table (config.go).
var markerSection = section{key: "marker", of: func(c *Config) sectionConfig { return &c.Marker },
	sources: []sourceKind{{"marker", func(c *Config) bool { return c.Marker.Enabled }, buildMarkerSource}},
	memory: []memoryUse{
		{what: "markers", bytes: markerEventBytes, size: func() uintptr { return unsafe.Sizeof(markerEvent{}) + marker.MaxLen },
			buffers: func(c *Config) []buffer { return oneBuffer(c.Marker.Enabled, "marker.ring", c.Marker.Ring) }},
		{what: "each series' key and time guard", bytes: markerSeriesBytes, size: markerSeriesSize,
			buffers: func(c *Config) []buffer { return oneBuffer(c.Marker.Enabled, "marker.max_series", c.Marker.MaxSeries) }},
	}}

// The marker source's budgets (the memory check): an event and its strings,
// and a series: its name and tags (at most MaxNameLen and MaxTags tags of
// MaxTagKeyLen + MaxTagValueLen), the map entry and its time guard (16 times).
const (
	markerEventBytes  = 216 + marker.MaxLen
	markerSeriesBytes = marker.MaxNameLen + marker.MaxTags*(marker.MaxTagKeyLen+marker.MaxTagValueLen) + 512
)

// markerSeriesSize is a series' real memory: its key, time guard, map slot
// and pointer, and the strings at their longest.
func markerSeriesSize() uintptr {
	return unsafe.Sizeof(marker.Series{}) + unsafe.Sizeof(record.SeriesTime{}) + 2*unsafe.Sizeof(uintptr(0)) +
		marker.MaxNameLen + marker.MaxTags*(marker.MaxTagKeyLen+marker.MaxTagValueLen)
}
