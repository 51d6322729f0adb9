package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// markerEvent is one marker as the reader hands it to the shipper.
type markerEvent struct {
	m       marker.Marker
	arrival int64 // REALTIME: the kernel's stamp of the datagram, else its read
}

// markerSeries is a marker's InfluxDB series (its name and tags; the host
// is the agent's).
type markerSeries struct {
	name string
	tags [marker.MaxTags]marker.Tag
}

// markerSource is the decoder of the application-marker event source.
type markerSource struct {
	path      string
	mode      os.FileMode
	maxSeries int
	log       *slog.Logger
	toRT      *timebase.Route // MONOTONIC -> REALTIME (collection goroutine)
	// The global timeline (nil without the hca section) and the routes to
	// its MONOTONIC_RAW (collection goroutine).
	global         *GlobalClock
	rtRaw, monoRaw *timebase.Route

	// The socket: opened by newMarkerSource, reopened by the producer after
	// a read failure, closed by Close (after Run returned).
	conn   *net.UnixConn
	file   os.FileInfo // the socket file as bound, to remove only ours
	stamps string      // the kernel-stamp option in use, "" for none

	dec           marker.Decoder // producer
	malformed     atomic.Uint64
	lastMalformed atomic.Pointer[string]
	kernelStamped atomic.Uint64
	readStamped   atomic.Uint64

	// Written on the collection goroutine only.
	series        map[markerSeries]*seriesTime // the times of each series
	times         timeCounts
	untranslated  uint64
	unplaced      uint64
	seriesDropped uint64
	events        uint64
}

// errMarkerInUse is a socket path another process serves.
var errMarkerInUse = errors.New("another process is listening on it")

func buildMarkerSource(env *Env) ([]Source, error) {
	c := env.Config.Marker
	mode, err := c.fileMode()
	if err != nil {
		return nil, keyErr("marker.mode", "%v", err)
	}
	tr := env.Translators
	if tr == nil {
		tr = timebase.NewTranslators()
	}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d, err := newMarkerSource(c.path(env.Config.Paths), mode, c.MaxSeries, tr, log)
	if err != nil {
		return nil, &KeyError{Key: "marker.socket", Reason: err.Error(), Err: err}
	}
	d.global = env.Global
	s, err := d.eventSource(c.Interval, c.Ring)
	if err != nil {
		d.close()
		return nil, keyErr("marker", "%v", err)
	}
	return []Source{s}, nil
}

// newMarkerSource binds the socket at path.
func newMarkerSource(path string, mode os.FileMode, maxSeries int, tr *timebase.Translators, log *slog.Logger) (*markerSource, error) {
	d := &markerSource{path: path, mode: mode, maxSeries: maxSeries, log: log,
		toRT:    tr.Route(timebase.DomainMonotonic, timebase.DomainRealtime),
		rtRaw:   tr.Route(timebase.DomainRealtime, timebase.DomainMonotonicRaw),
		monoRaw: tr.Route(timebase.DomainMonotonic, timebase.DomainMonotonicRaw),
		series:  map[markerSeries]*seriesTime{}}
	if err := d.listen(); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *markerSource) eventSource(interval time.Duration, ringSize int) (*EventSource[markerEvent], error) {
	return NewEventSource(EventSourceConfig[markerEvent]{
		Name: "marker", Interval: interval, Ring: ringSize,
		Producer: ProducerFunc[markerEvent](d.produce), Emit: d.emit, Self: d.self, Close: d.close,
	})
}

// listen binds the socket: under a temporary name, given its mode, then
// renamed to the path, so that it is never reachable with other
// permissions. A file already at the path is replaced only when it is a
// socket nobody listens on (a previous agent's, left by a crash); a live
// socket or any other file is an error.
func (d *markerSource) listen() error {
	if err := staleMarkerSocket(d.path); err != nil {
		return err
	}
	tmp := d.path + "." + strconv.Itoa(os.Getpid()) + ".tmp"
	os.Remove(tmp) // a leftover of this pid's earlier attempt
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: tmp, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("marker socket %s: %w", d.path, err)
	}
	fail := func(err error) error {
		conn.Close()
		os.Remove(tmp)
		return fmt.Errorf("marker socket %s: %w", d.path, err)
	}
	if err := os.Chmod(tmp, d.mode); err != nil {
		return fail(err)
	}
	fi, err := os.Stat(tmp)
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, d.path); err != nil {
		return fail(err)
	}
	d.conn, d.file = conn, fi
	d.stamps = enableMarkerStamps(conn)
	d.log.Debug("marker socket", "path", d.path, "mode", fmt.Sprintf("%04o", d.mode), "kernel_stamps", d.stamps)
	return nil
}

// staleMarkerSocket is nil when path is free or a socket nobody listens on.
func staleMarkerSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("marker socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("marker socket %s: exists and is not a socket (%s): not replaced", path, fi.Mode().Type())
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err == nil {
		c.Close()
		return fmt.Errorf("marker socket %s: %w", path, errMarkerInUse)
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil // stale: replaced
	}
	return fmt.Errorf("marker socket %s: exists and cannot be checked, not replaced: %w", path, err)
}

// enableMarkerStamps asks the kernel to stamp each datagram (REALTIME, when
// the sender's sendmsg queued it): SO_TIMESTAMPNS_NEW (64-bit time on every
// target), else the old SO_TIMESTAMPNS; "" when neither is available (the
// reader stamps on receipt).
func enableMarkerStamps(c *net.UnixConn) string {
	rc, err := c.SyscallConn()
	if err != nil {
		return ""
	}
	opt := ""
	rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_NEW, 1) == nil {
			opt = "SO_TIMESTAMPNS_NEW"
		} else if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS_OLD, 1) == nil {
			opt = "SO_TIMESTAMPNS"
		}
	})
	return opt
}

// markerKernelStamp finds the SCM_TIMESTAMPNS stamp in a control buffer of
// layout l.
func markerKernelStamp(l sockts.Layout, oob []byte) (int64, bool) {
	for off := 0; off+l.HeaderLen <= len(oob); {
		var length int
		if l.HeaderLen == 16 {
			length = int(binary.NativeEndian.Uint64(oob[off:]))
		} else {
			length = int(binary.NativeEndian.Uint32(oob[off:]))
		}
		if length < l.HeaderLen || length > len(oob)-off {
			return 0, false
		}
		level := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-4:]))
		data := oob[off+l.HeaderLen : off+length]
		if level == unix.SOL_SOCKET && (typ == unix.SO_TIMESTAMPNS_NEW || typ == unix.SO_TIMESTAMPNS_OLD) {
			switch len(data) {
			case 16: // __kernel_timespec, or timespec with a 64-bit time_t
				return int64(binary.NativeEndian.Uint64(data))*1e9 + int64(binary.NativeEndian.Uint64(data[8:])), true
			case 8: // timespec with a 32-bit time_t
				return int64(binary.NativeEndian.Uint32(data))*1e9 + int64(int32(binary.NativeEndian.Uint32(data[4:]))), true
			}
		}
		off += (length + l.Align - 1) &^ (l.Align - 1)
	}
	return 0, false
}

// maxStampSkewNS bounds how far a kernel stamp may be from the read that
// brought it; a stamp further off (a mangled control message) is replaced
// by the read's time.
const maxStampSkewNS = int64(time.Minute)

// produce reads datagrams until ctx is done: each is stamped, parsed and
// queued; a malformed one is dropped and counted. A read failure closes the
// socket and ends it; the event source backs off and calls it again, and it
// binds the socket again.
func (d *markerSource) produce(ctx context.Context, q *EventQueue[markerEvent]) error {
	if d.conn == nil {
		if err := d.listen(); err != nil {
			return err
		}
	}
	conn := d.conn
	stop := context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, marker.MaxLen+2) // a line, its "\r\n", and one more byte shows a longer one
	oob := make([]byte, 64)
	layout := sockts.NativeLayout()
	for {
		n, oobn, flags, _, err := conn.ReadMsgUnix(buf, oob)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			d.close()
			return fmt.Errorf("marker socket %s: read: %w", d.path, err)
		}
		read, _ := timebase.Realtime.Now()
		arrival, ok := markerKernelStamp(layout, oob[:oobn])
		if ok && arrival-read < maxStampSkewNS && read-arrival < maxStampSkewNS {
			d.kernelStamped.Add(1)
		} else {
			arrival = read
			d.readStamped.Add(1)
		}
		if flags&unix.MSG_TRUNC != 0 {
			d.bad(fmt.Errorf("marker: line: longer than %d bytes", marker.MaxLen))
			continue
		}
		m, err := d.dec.Parse(buf[:n])
		if err != nil {
			d.bad(err)
			continue
		}
		q.Put1(markerEvent{m: m, arrival: arrival})
	}
}

// bad counts a malformed datagram and keeps its error.
func (d *markerSource) bad(err error) {
	if d.malformed.Add(1) == 1 {
		d.log.Warn("malformed marker dropped (the next are only counted)", "socket", d.path, "err", err)
	}
	s := err.Error()
	d.lastMalformed.Store(&s)
}

// emit ships one marker at its time: the sender's stamp (REALTIME as it is,
// MONOTONIC moved to REALTIME through the clock models), else its arrival.
// With the hca section, that time is also placed on the global timeline
// (hca_local_ns, global_ns, global_bound_ns; unplaced counts the markers
// before the first model).
// Markers of one series (name and tags) never share a time: one with a
// time its series already has moves to the first free nanosecond after it
// (seriesTime, counted in time_bumps; time_unchecked counts those it could
// not check); markers of a series beyond max_series are dropped.
func (d *markerSource) emit(b *Batch, e *markerEvent) {
	m := &e.m
	key := markerSeries{name: m.Name, tags: m.Tags}
	st := d.series[key]
	if st == nil {
		if len(d.series) >= d.maxSeries {
			d.seriesDropped++
			return
		}
		st = &seriesTime{}
		d.series[key] = st
	}
	d.events++
	t := e.arrival
	f := make([]record.Field, 0, 8)
	if m.HasValue {
		f = append(f, record.Float("value", m.Value))
	}
	f = append(f, record.Int("arrival_ns", e.arrival))
	switch m.Clock {
	case marker.ClockRealtime:
		t = m.StampNS
		f = append(f, record.Int("sender_ns", m.StampNS), record.String("sender_clock", m.Clock.String()))
	case marker.ClockMonotonic:
		f = append(f, record.Int("sender_ns", m.StampNS), record.String("sender_clock", m.Clock.String()))
		if rt, err := d.toRT.Move(timebase.Timestamp{NS: m.StampNS, Domain: timebase.DomainMonotonic}); err == nil {
			t = rt.NS
			f = append(f, record.Int("uncertainty_ns", rt.UncertaintyNS))
		} else {
			d.untranslated++
		}
	}
	if d.global != nil {
		at, route := timebase.Timestamp{NS: t, Domain: timebase.DomainRealtime}, d.rtRaw
		if m.Clock == marker.ClockMonotonic {
			at, route = timebase.Timestamp{NS: m.StampNS, Domain: timebase.DomainMonotonic}, d.monoRaw
		}
		var placed bool
		if f, placed = d.global.appendGlobal(f, route, at); !placed {
			d.unplaced++
		}
	}
	tags := make([]record.Tag, 0, 1+m.NumTags)
	tags = append(tags, record.Tag{Key: "name", Value: m.Name})
	for _, tg := range m.TagList() {
		tags = append(tags, record.Tag{Key: tg.Key, Value: tg.Value})
	}
	b.Add("marker", st.place(t, &d.times), tags, f...)
}

// self is the decoder's counts beside the event source's.
func (d *markerSource) self() []record.Field {
	f := []record.Field{
		record.Uint("markers", d.events),
		record.Uint("malformed", d.malformed.Load()),
		record.Uint("kernel_stamped", d.kernelStamped.Load()),
		record.Uint("read_stamped", d.readStamped.Load()),
		record.Uint("untranslated", d.untranslated),
		record.Uint("unplaced", d.unplaced),
		record.Uint("time_bumps", d.times.bumps),
		record.Uint("time_unchecked", d.times.unchecked),
		record.Uint("series", uint64(len(d.series))),
		record.Uint("series_dropped", d.seriesDropped),
	}
	if p := d.lastMalformed.Load(); p != nil {
		f = append(f, record.String("malformed_last_error", *p))
	}
	return f
}

// close closes the socket and removes its file, if the file is still the
// one it bound (a successor's socket is left alone).
func (d *markerSource) close() error {
	if d.conn == nil {
		return nil
	}
	err := d.conn.Close()
	d.conn = nil
	if fi, e := os.Lstat(d.path); e == nil && os.SameFile(fi, d.file) {
		if e := os.Remove(d.path); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return fmt.Errorf("marker socket %s: close: %w", d.path, err)
	}
	return nil
}
