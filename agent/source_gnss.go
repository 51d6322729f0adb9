package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/gnss"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// gnssStale is how long the judged clock may go without a reference
// message (PPS or TOFF, one a second) before it loses its reference: three
// missed in a row. A fix is current for as long.
const gnssStale = 3 * time.Second

// gnssFaultQuiet is how long a gpsd that sent ERROR lines, or lines the
// source skips, must go without one before a report ends the fault in the
// log (with its count): one that alternates bad lines and good ones costs
// at most two log lines a minute, not two per bad line.
const gnssFaultQuiet = time.Minute

// gnssInfoLines is the most VERSION, DEVICES, DEVICE and WATCH lines a
// connection logs (each only when its text differs from the class's last
// logged one); the rest are counted only.
const gnssInfoLines = 16

// gnssEvent is one decoded gpsd message and when its line was read.
type gnssEvent struct {
	msg  gnss.Message
	read int64 // REALTIME when the read that completed the line returned
}

// gnssConn is what the source needs of a gpsd connection (*gnss.Conn).
type gnssConn interface {
	Next(m *gnss.Message) (int64, error)
	Close() error
}

var _ gnssConn = (*gnss.Conn)(nil)

// gnssSource is the decoder of the gpsd event source.
type gnssSource struct {
	name string // gnss:<address>
	log  *slog.Logger
	dial func(ctx context.Context) (gnssConn, error)
	now  func() time.Time // the log's clock (tests)

	judges   *judging.Judges // where each receiver's judged clock is added; nil: not judged
	judgeCfg JudgeConfig     // gnss.judge
	referee  *gnss.Referee   // what each message says of the system clock, per receiver
	// ringDropped is the messages the source's ring could not hold, part of
	// each receiver's events_lost (a dropped message may be any receiver's).
	ringDropped func() uint64

	// Counted by the producer.
	connections, garbage, unknown, logged, gpsdErrors, timeouts, overCap atomic.Uint64

	// The producer's own.
	admitted          *gnss.Devices               // the first gnss.max_devices receivers
	errLog, skipLog   faultlog.Log                // gpsd's ERROR lines; lines skipped
	lastErr, lastSkip time.Time                   // the latest of each
	lastText          [gnss.ClassError + 1]string // per class, the text last logged
	infoLines         int                         // logged on this connection

	// Written on the collection goroutine only.
	devices map[string]*gnssDevice // at most gnss.max_devices
	bumps   uint64
}

// gnssDevice is one receiver: its series, and the system clock judged
// against it alone (nil when not judged).
type gnssDevice struct {
	series [gnss.ClassPPS + 1]*gnssSeries // by class: TPV, SKY, TOFF, PPS
	judged *judgement
}

// gnssSeries is one class and device: its tags and its record times.
type gnssSeries struct {
	tags  []record.Tag
	times record.SeriesTime
}

func buildGNSS(env *Env) ([]collect.Source, error) {
	c := env.Config.GNSS
	s := newGNSSSource(c, env.Log, nil)
	if err := s.judge(env.judges, c); err != nil {
		return nil, err
	}
	src, err := collect.Decode(s.name, c.Interval, c.Ring, s)
	if err == nil {
		s.ringDropped = src.RingDropped
	}
	return one(src, err)
}

// newGNSSSource reads gpsd at c.Address; dial, when not nil, replaces
// connecting to it (tests).
func newGNSSSource(c GNSSConfig, log *slog.Logger, dial func(ctx context.Context) (gnssConn, error)) *gnssSource {
	s := &gnssSource{name: "gnss:" + c.Address, log: log, dial: dial, now: time.Now,
		admitted: gnss.NewDevices(c.MaxDevices), devices: map[string]*gnssDevice{}}
	if s.dial == nil {
		s.dial = func(ctx context.Context) (gnssConn, error) { return gnss.Dial(ctx, c.Address, c.ReadTimeout) }
	}
	return s
}

// judge sets up judging the system clock against each receiver
// (gnss.judge): its PPS edges, or with reference toff its TOFF messages.
// Each receiver is a reference of its own, its judged clock added when its
// first message comes (source gnss:<address>:<device>): one without a fix
// resets nothing of another's.
func (s *gnssSource) judge(g *judging.Judges, c GNSSConfig) error {
	reference, latency := gnss.ClassPPS, c.Latency
	if c.Reference == "toff" {
		reference, latency = gnss.ClassTOFF, c.TOFFLatency
	}
	if g != nil && c.Judge.Enabled {
		s.judges, s.judgeCfg = g, c.Judge
	}
	s.referee = gnss.NewReferee(reference, int64(gnssStale), int64(latency), c.MaxDevices)
	return nil
}

// deviceOf is a receiver's series and judged clock, made on its first
// message (the producer admits at most gnss.max_devices).
func (s *gnssSource) deviceOf(device string) *gnssDevice {
	if d, ok := s.devices[device]; ok {
		return d
	}
	d := &gnssDevice{}
	if s.judges != nil {
		var err error
		if d.judged, err = s.judges.Add("system", s.name+":"+device, s.judgeCfg, gnssStale); err != nil {
			s.log.Error("gpsd receiver not judged", "source", s.name, "device", device, "err", err)
		}
		if lost := s.ringDropped; lost != nil {
			d.judged.CountLost(lost)
		}
	}
	s.devices[device] = d
	return d
}

// Produce connects to gpsd, sends WATCH and queues every TPV, SKY, TOFF and
// PPS message of the first gnss.max_devices receivers with its read time
// until ctx is done; messages of other receivers are counted and dropped.
// VERSION, DEVICES, DEVICE, WATCH and ERROR are counted and logged by
// change (logMessage); lines it cannot decode are counted, logged by
// change, and skipped. A failed connection, or one that brings nothing
// for gnss.read_timeout, ends it: the event source counts it, backs off
// and calls it again.
func (s *gnssSource) Produce(ctx context.Context, q *collect.EventQueue[gnssEvent]) error {
	c, err := s.dial(ctx)
	if err != nil {
		return err // gnss names gpsd's address
	}
	defer c.Close()
	s.connections.Add(1)
	s.infoLines = 0
	var e gnssEvent
	for {
		at, err := c.Next(&e.msg)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, gnss.ErrUnknownClass), errors.Is(err, gnss.ErrGarbage):
			if errors.Is(err, gnss.ErrGarbage) {
				s.garbage.Add(1)
			} else {
				s.unknown.Add(1)
			}
			s.lastSkip = s.now()
			s.skipLog.NoteKind(s.log, s.lastSkip, "skipped", err, "reading gpsd", "source", s.name)
			continue
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.timeouts.Add(1)
			return err // gnss names gpsd and the timeout
		case err != nil:
			return err
		case e.msg.Class.Logged():
			s.logMessage(&e.msg)
			continue
		case !s.admitted.Admit(e.msg.Device):
			s.overCap.Add(1)
			continue
		}
		s.report()
		e.read = at
		q.Put1(e)
	}
}

// logMessage counts a VERSION, DEVICES, DEVICE, WATCH or ERROR message and
// logs what is new of it. ERROR lines are one fault (faultlog: its start,
// a summary every ten minutes with the latest, its end at the first report
// gnssFaultQuiet after the last, with the count); the others are logged
// when their text differs from the class's last logged one, at most
// gnssInfoLines a connection.
func (s *gnssSource) logMessage(m *gnss.Message) {
	s.logged.Add(1)
	if m.Class == gnss.ClassError {
		s.gpsdErrors.Add(1)
		s.lastErr = s.now()
		s.errLog.NoteKind(s.log, s.lastErr, "ERROR", fmt.Errorf("gpsd sends ERROR: %s", m.Text), "gpsd", "source", s.name)
		return
	}
	if m.Text == s.lastText[m.Class] || s.infoLines > gnssInfoLines {
		return
	}
	if s.infoLines++; s.infoLines > gnssInfoLines {
		s.log.Warn("gpsd sends ever new VERSION, DEVICES, DEVICE or WATCH lines: the rest of this connection's are counted only (logged_messages)",
			"source", s.name)
		return
	}
	s.lastText[m.Class] = m.Text
	s.log.Info("gpsd "+m.Class.String(), "source", s.name, "line", m.Text)
}

// report notes a report message (TPV, SKY, TOFF, PPS): a fault of ERROR
// lines or skipped lines ends once none came for gnssFaultQuiet.
func (s *gnssSource) report() {
	if s.lastErr.IsZero() && s.lastSkip.IsZero() {
		return
	}
	now := s.now()
	if !s.lastErr.IsZero() && now.Sub(s.lastErr) >= gnssFaultQuiet {
		s.errLog.NoteKind(s.log, now, "", nil, "gpsd", "source", s.name)
		s.lastErr = time.Time{}
	}
	if !s.lastSkip.IsZero() && now.Sub(s.lastSkip) >= gnssFaultQuiet {
		s.skipLog.NoteKind(s.log, now, "", nil, "reading gpsd", "source", s.name)
		s.lastSkip = time.Time{}
	}
}

// seriesOf is the series of a class of a receiver, made on first use.
func (d *gnssDevice) seriesOf(c gnss.Class, device string) *gnssSeries {
	if ser := d.series[c]; ser != nil {
		return ser
	}
	class := map[gnss.Class]string{gnss.ClassTPV: "tpv", gnss.ClassSKY: "sky", gnss.ClassTOFF: "toff", gnss.ClassPPS: "pps"}[c]
	d.series[c] = &gnssSeries{tags: []record.Tag{{Key: "class", Value: class}, {Key: "device", Value: device}}}
	return d.series[c]
}

// Emit ships one message as a gnss record: TPV and SKY at the read time,
// TOFF and PPS at the system clock's stamp in the message (clock_sec,
// clock_nsec). No two records of a class and device share a time: a time
// the series has moves to the first free ns after it (time_bumps). The
// receiver's judged clock, if any, gets the referee's verdict on each of
// its messages (gnss.Referee).
func (s *gnssSource) Emit(b *collect.Batch, e *gnssEvent) {
	m := &e.msg
	dev := s.deviceOf(m.Device)
	ser := dev.seriesOf(m.Class, m.Device)
	f := make([]record.Field, 0, 6)
	t := e.read
	switch m.Class {
	case gnss.ClassTPV:
		f = append(f, record.Int("mode", int64(m.Mode)))
		if m.Has&gnss.HasTime != 0 {
			f = append(f, record.Int("fix_time_ns", m.TimeNS))
		}
		if m.Has&gnss.HasEpt != 0 {
			f = append(f, record.Int("ept_ns", m.EptNS))
		}
		if m.Has&gnss.HasLat != 0 && m.Has&gnss.HasLon != 0 {
			f = append(f, record.Float("lat", m.Lat), record.Float("lon", m.Lon))
		}
		if m.Has&gnss.HasAlt != 0 {
			f = append(f, record.Float("alt_m", m.AltM))
		}
		t = ser.times.Next(e.read, &s.bumps)
		b.Add("gnss", t, ser.tags, f...)
	case gnss.ClassSKY:
		if m.Has&gnss.HasSeen != 0 {
			f = append(f, record.Int("satellites_seen", int64(m.Seen)))
		}
		if m.Has&gnss.HasUsed != 0 {
			f = append(f, record.Int("satellites_used", int64(m.Used)))
		}
		if len(f) > 0 { // a SKY of DOPs alone says nothing recorded here
			b.Add("gnss", ser.times.Next(e.read, &s.bumps), ser.tags, f...)
		}
	case gnss.ClassTOFF, gnss.ClassPPS:
		t = ser.times.Next(m.ClockNS, &s.bumps)
		f = append(f, record.Int("real_ns", m.RealNS), record.Int("clock_ns", m.ClockNS), record.Int("offset_ns", m.OffsetNS()),
			record.Int("read_ns", e.read))
		if m.Has&gnss.HasPrecision != 0 {
			f = append(f, record.Int("precision", int64(m.Precision)))
		}
		if m.Has&gnss.HasQErr != 0 {
			f = append(f, record.Int("qerr_ps", m.QErrPS))
		}
		b.Add("gnss", t, ser.tags, f...)
	}
	if dev.judged == nil {
		return
	}
	// The judge takes a TOFF's or PPS's own stamp, not its record time: that
	// is moved past its series' last, which after a step back of REALTIME
	// stays in the old timeline.
	at := t
	if m.Class == gnss.ClassTOFF || m.Class == gnss.ClassPPS {
		at = m.ClockNS
	}
	switch v := s.referee.Judge(m, e.read, at); v.Kind {
	case gnss.VerdictMissed:
		dev.judged.Missed(b, v.TimeNS)
	case gnss.VerdictSample:
		dev.judged.Observe(b, judge.Sample{TimeNS: v.TimeNS, Synced: v.Synced, OffsetNS: v.OffsetNS, BoundNS: v.BoundNS, FreqErrPPB: -1})
	}
}

// Self is the decoder's counts beside the event source's.
func (s *gnssSource) Self() []record.Field {
	return []record.Field{
		record.Uint("connections", s.connections.Load()), record.Uint("garbage_lines", s.garbage.Load()),
		record.Uint("unknown_classes", s.unknown.Load()), record.Uint("logged_messages", s.logged.Load()),
		record.Uint("gpsd_errors", s.gpsdErrors.Load()), record.Uint("read_timeouts", s.timeouts.Load()),
		record.Uint("over_device_cap", s.overCap.Load()), record.Uint("time_bumps", s.bumps),
	}
}

// gnssSection is the gnss section's entry in the table (config.go).
var gnssSection = section{key: "gnss", of: func(c *Config) sectionConfig { return &c.GNSS },
	sources: []sourceKind{{"gnss", func(c *Config) bool { return c.GNSS.Enabled }, buildGNSS}},
	memory: []memoryUse{{what: "gpsd messages", bytes: gnssEventBytes, size: func() uintptr { return unsafe.Sizeof(gnssEvent{}) },
		buffers: func(c *Config) []buffer { return oneBuffer(c.GNSS.Enabled, "gnss.ring", c.GNSS.Ring) }}}}

// gnssEventBytes is a ring entry's budget (the memory check): a decoded gpsd
// message; its device path is shared.
const gnssEventBytes = 160
