package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/ring"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// scan is one buffered sample as the reader hands it to the shipper.
type scan struct {
	ns   int64 // the kernel's timestamp (the buffer's clock), 0 without one
	read int64 // REALTIME when the reader got it
	vals [maxBufferChannels]int64
}

// sensorBufferSource samples an IIO device through its buffer: a goroutine
// drains the character device in batches into a ring, and each collection
// ships what the ring holds, one record per sample at the kernel's timestamp
// moved to REALTIME.
type sensorBufferSource struct {
	cfg    SensorBufferConfig
	buf    *sensors.Buffer
	ring   *ring.Ring[scan]
	tr     *Translators
	tags   []record.Tag
	fields []string // per channel of the layout: its field name ("" for the timestamp)
	out    []scan

	cancel context.CancelFunc
	done   chan struct{}

	readErrors   atomic.Uint64
	untranslated atomic.Uint64
	lastErr      atomic.Pointer[error]
}

func buildSensorBuffers(env *Env) ([]Source, error) {
	c := env.Config
	fs := sensors.NewFS(c.Paths.Sys, c.Paths.Dev)
	var out []Source
	for i, bc := range c.Sensors.Buffers {
		key := fmt.Sprintf("sensors.buffers[%d]", i)
		s, err := newSensorBufferSource(fs, bc, env.Translators)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, keyErr(key, "%v", err)
		}
		out = append(out, s)
	}
	return out, nil
}

func newSensorBufferSource(fs sensors.FS, bc SensorBufferConfig, tr *Translators) (*sensorBufferSource, error) {
	devs, err := fs.IIODevices()
	if err != nil {
		return nil, err
	}
	var dev *sensors.IIODevice
	for i := range devs {
		if devs[i].Name == bc.Device || devs[i].Node == bc.Device {
			dev = &devs[i]
			break
		}
	}
	if dev == nil {
		return nil, fmt.Errorf("no IIO device %q under %s (%d devices)", bc.Device, fs.Sys, len(devs))
	}
	r, err := ring.New[scan](bc.Ring)
	if err != nil {
		return nil, err
	}
	b, err := fs.OpenBuffer(*dev, bc.Channels, bc.Length)
	if err != nil {
		return nil, err
	}
	if tr == nil {
		tr = NewTranslators()
	}
	s := &sensorBufferSource{cfg: bc, buf: b, ring: r, tr: tr, out: make([]scan, 256), done: make(chan struct{}),
		tags: []record.Tag{{Key: "device", Value: dev.Name}, {Key: "node", Value: dev.Node}, {Key: "clock", Value: b.Clock.String()}}}
	for i, ch := range b.Layout.Channels {
		name := ch.Name // values in the kind's unit; raw for types without one
		if i == b.TimestampIndex() {
			name = ""
		}
		s.fields = append(s.fields, name)
	}
	var ctx context.Context
	ctx, s.cancel = context.WithCancel(context.Background())
	go s.read(ctx)
	return s, nil
}

// read drains the buffer into the ring until ctx is done.
func (s *sensorBufferSource) read(ctx context.Context) {
	defer close(s.done)
	per := len(s.buf.Layout.Channels)
	vals := make([]int64, 64*per)
	batch := make([]scan, 64)
	for ctx.Err() == nil {
		n, err := s.buf.Read(vals, 100*time.Millisecond)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErrors.Add(1)
				s.lastErr.Store(&err)
			}
			select { // a device that errs (or a file at its end) is retried, not spun on
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		now, _ := timebase.Realtime.Now()
		for r := 0; r < n; r++ {
			v := vals[r*per : (r+1)*per]
			sc := scan{read: now}
			sc.ns, _ = s.buf.Timestamp(v)
			for i := range v {
				sc.vals[i], _ = s.buf.Value(i, v[i])
			}
			batch[r] = sc
		}
		s.ring.PutBatch(batch[:n])
	}
}

func (s *sensorBufferSource) Name() string            { return "sensor_buffer:" + s.buf.Device.Node }
func (s *sensorBufferSource) Interval() time.Duration { return time.Second }

func (s *sensorBufferSource) Close() error {
	s.cancel()
	<-s.done
	return s.buf.Close()
}

// realtime moves a kernel timestamp to REALTIME: directly, through the
// clock source's model of its clock, or through monotonic_raw (the clock
// source's reference) in two steps.
func (s *sensorBufferSource) realtime(ns int64) (int64, bool) {
	d := s.buf.Clock
	if d == timebase.DomainRealtime {
		return ns, true
	}
	ts := timebase.Timestamp{NS: ns, Domain: d}
	if d != timebase.DomainMonotonicRaw {
		tr, ok := s.tr.Lookup(d, timebase.DomainMonotonicRaw)
		if !ok {
			return 0, false
		}
		var err error
		if ts, err = tr.Translate(ts); err != nil {
			return 0, false
		}
	}
	tr, ok := s.tr.Lookup(timebase.DomainMonotonicRaw, timebase.DomainRealtime)
	if !ok {
		return 0, false
	}
	ts, err := tr.Translate(ts)
	return ts.NS, err == nil
}

// Collect ships the samples in the ring. A sample whose timestamp cannot be
// moved to REALTIME (no clock model yet) is shipped at the time it was read,
// its kernel timestamp kept in kernel_ns, and counted.
func (s *sensorBufferSource) Collect(ctx context.Context, b *Batch) error {
	total := 0
	for {
		n := s.ring.Get(s.out)
		for _, sc := range s.out[:n] {
			f := make([]record.Field, 0, len(s.fields)+1)
			for i, name := range s.fields {
				if name != "" {
					f = append(f, record.Int(name, sc.vals[i]))
				}
			}
			t := sc.read
			if sc.ns != 0 {
				if rt, ok := s.realtime(sc.ns); ok {
					t = rt
				} else {
					s.untranslated.Add(1)
					f = append(f, record.Int("kernel_ns", sc.ns))
				}
			}
			b.Add("sensor_scan", t, s.tags, f...)
		}
		total += n
		if n < len(s.out) {
			break
		}
	}
	if p := s.lastErr.Swap(nil); p != nil {
		return *p
	}
	if total == 0 {
		return ErrNoData
	}
	return nil
}

// SelfFields implements SelfReporter.
func (s *sensorBufferSource) SelfFields() []record.Field {
	return []record.Field{record.Uint("ring_dropped", s.ring.Dropped()), record.Int("ring_waiting", int64(s.ring.Len())),
		record.Uint("read_errors", s.readErrors.Load()), record.Uint("untranslated", s.untranslated.Load())}
}
