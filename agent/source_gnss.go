package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gnss"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// gnssStale is how long the judged clock may go without a reference
// message (PPS or TOFF, one a second) before it loses its reference: three
// missed in a row. A fix is current for as long.
const gnssStale = 3 * time.Second

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

	judged  *judgement    // the system clock against the receiver, or nil
	referee *gnss.Referee // what each message says of that clock

	// Counted by the producer.
	connections, garbage, unknown, logged atomic.Uint64

	// Written on the collection goroutine only.
	series map[gnssKey]*gnssSeries
	bumps  uint64
}

type gnssKey struct {
	class  gnss.Class
	device string
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
	return one(collect.Decode(s.name, c.Interval, c.Ring, s))
}

// newGNSSSource reads gpsd at c.Address; dial, when not nil, replaces
// connecting to it (tests).
func newGNSSSource(c GNSSConfig, log *slog.Logger, dial func(ctx context.Context) (gnssConn, error)) *gnssSource {
	s := &gnssSource{name: "gnss:" + c.Address, log: log, dial: dial,
		series: map[gnssKey]*gnssSeries{}}
	if s.dial == nil {
		s.dial = func(ctx context.Context) (gnssConn, error) { return gnss.Dial(ctx, c.Address) }
	}
	return s
}

// judge registers the system clock's judge against the receiver
// (gnss.judge): its PPS edges, or with reference toff its TOFF messages.
func (s *gnssSource) judge(g *judging, c GNSSConfig) (err error) {
	reference, latency := gnss.ClassPPS, c.Latency
	if c.Reference == "toff" {
		reference, latency = gnss.ClassTOFF, c.TOFFLatency
	}
	if s.judged, err = g.add("system", s.name, c.Judge, gnssStale); err != nil {
		return keyErr("gnss.judge", "%v", err)
	}
	s.referee = gnss.NewReferee(reference, int64(gnssStale), int64(latency))
	return nil
}

// Produce connects to gpsd, sends WATCH and queues every TPV, SKY, TOFF and
// PPS message with its read time until ctx is done. VERSION, DEVICES,
// DEVICE, WATCH and ERROR are logged; lines it cannot decode are counted
// (the first of a connection logged) and skipped. A failed connection ends
// it: the event source counts it, backs off and calls it again.
func (s *gnssSource) Produce(ctx context.Context, q *collect.EventQueue[gnssEvent]) error {
	c, err := s.dial(ctx)
	if err != nil {
		return err // gnss names gpsd's address
	}
	defer c.Close()
	s.connections.Add(1)
	warned := false
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
			if !warned {
				s.log.Warn("gpsd line skipped (the rest of this connection's are counted only)", "source", s.name, "err", err)
				warned = true
			}
			continue
		case err != nil:
			return err
		case e.msg.Class.Logged():
			s.logged.Add(1)
			level := slog.LevelInfo
			if e.msg.Class == gnss.ClassError {
				level = slog.LevelWarn
			}
			s.log.Log(ctx, level, "gpsd "+e.msg.Class.String(), "source", s.name, "line", e.msg.Text)
			continue
		}
		e.read = at
		q.Put1(e)
	}
}

// seriesOf is the series of a class and device, made on first use.
func (s *gnssSource) seriesOf(c gnss.Class, device string) *gnssSeries {
	k := gnssKey{c, device}
	if ser, ok := s.series[k]; ok {
		return ser
	}
	class := map[gnss.Class]string{gnss.ClassTPV: "tpv", gnss.ClassSKY: "sky", gnss.ClassTOFF: "toff", gnss.ClassPPS: "pps"}[c]
	ser := &gnssSeries{tags: []record.Tag{{Key: "class", Value: class}, {Key: "device", Value: device}}}
	s.series[k] = ser
	return ser
}

// Emit ships one message as a gnss record: TPV and SKY at the read time,
// TOFF and PPS at the system clock's stamp in the message (clock_sec,
// clock_nsec). No two records of a class and device share a time: a time
// the series has moves to the first free ns after it (time_bumps). The
// judge, if any, gets the referee's verdict on every message (gnss.Referee).
func (s *gnssSource) Emit(b *collect.Batch, e *gnssEvent) {
	m := &e.msg
	ser := s.seriesOf(m.Class, m.Device)
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
	if s.judged == nil {
		return
	}
	switch v := s.referee.Judge(m, e.read, t); v.Kind {
	case gnss.VerdictMissed:
		s.judged.missed(b, v.TimeNS)
	case gnss.VerdictSample:
		s.judged.observe(b, judge.Sample{TimeNS: v.TimeNS, Synced: v.Synced, OffsetNS: v.OffsetNS, BoundNS: v.BoundNS, FreqErrPPB: -1})
	}
}

// Self is the decoder's counts beside the event source's.
func (s *gnssSource) Self() []record.Field {
	return []record.Field{
		record.Uint("connections", s.connections.Load()), record.Uint("garbage_lines", s.garbage.Load()),
		record.Uint("unknown_classes", s.unknown.Load()), record.Uint("logged_messages", s.logged.Load()),
		record.Uint("time_bumps", s.bumps),
	}
}

// gnssSection is the gnss section's entry in the table (config.go).
var gnssSection = section{key: "gnss", of: func(c *Config) sectionConfig { return &c.GNSS },
	sources: []sourceKind{{"gnss", func(c *Config) bool { return c.GNSS.Enabled }, buildGNSS}}}
