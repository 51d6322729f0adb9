package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// scan is one buffered sample as the reader hands it to the shipper.
type scan struct {
	ns   int64 // the kernel's timestamp (the buffer's clock), 0 without one
	read int64 // REALTIME when the reader got it, plus the sample's index in that read
	vals [maxBufferChannels]int64
}

// sensorBuffer is the decoder of an IIO buffer event source: its producer
// drains the character device in batches into the ring, and each collection
// ships one record per sample at the kernel's timestamp moved to REALTIME.
type sensorBuffer struct {
	buf    *sensors.Buffer
	tr     *Translators
	tags   []record.Tag
	fields []string // per channel of the layout: its field name ("" for the timestamp)

	untranslated atomic.Uint64
	// The global timeline (nil without the hca section); toRaw is the
	// collection goroutine's route from the buffer's clock to MONOTONIC_RAW.
	global   *GlobalClock
	toRaw    *Route
	unplaced atomic.Uint64
}

func buildSensorBuffers(env *Env) ([]Source, error) {
	c := env.Config
	fs := sensors.NewFS(c.Paths.Sys, c.Paths.Dev)
	var out []Source
	for i, bc := range c.Sensors.Buffers {
		key := fmt.Sprintf("sensors.buffers[%d]", i)
		s, err := newSensorBufferSource(fs, bc, env.Translators, env.Global)
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

func newSensorBufferSource(fs sensors.FS, bc SensorBufferConfig, tr *Translators, global *GlobalClock) (*EventSource[scan], error) {
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
	if bc.Ring < 1 || bc.Ring&(bc.Ring-1) != 0 {
		return nil, fmt.Errorf("ring: %d is not a power of two", bc.Ring)
	}
	b, err := fs.OpenBuffer(*dev, bc.Channels, bc.Length)
	if err != nil {
		return nil, err
	}
	if tr == nil {
		tr = NewTranslators()
	}
	d := &sensorBuffer{buf: b, tr: tr, global: global, toRaw: tr.Route(b.Clock, timebase.DomainMonotonicRaw),
		tags: []record.Tag{{Key: "device", Value: dev.Name}, {Key: "node", Value: dev.Node}, {Key: "clock", Value: b.Clock.String()}}}
	for i, ch := range b.Layout.Channels {
		name := ch.Name // values in the kind's unit; raw for types without one
		if i == b.TimestampIndex() {
			name = ""
		}
		d.fields = append(d.fields, name)
	}
	s, err := NewEventSource(EventSourceConfig[scan]{
		Name: "sensor_buffer:" + dev.Node, Interval: time.Second, Ring: bc.Ring,
		Producer: ProducerFunc[scan](d.produce), Emit: d.emit, Close: b.Close,
		Self: func() []record.Field {
			return []record.Field{record.Uint("untranslated", d.untranslated.Load()), record.Uint("unplaced", d.unplaced.Load())}
		},
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return s, nil
}

// produce drains the buffer into the queue until ctx is done; a device error
// ends it (the event source counts it and runs it again after a back-off).
func (d *sensorBuffer) produce(ctx context.Context, q *EventQueue[scan]) error {
	per := len(d.buf.Layout.Channels)
	vals := make([]int64, 64*per)
	batch := make([]scan, 64)
	for ctx.Err() == nil {
		n, err := d.buf.Read(vals, 100*time.Millisecond)
		if errors.Is(err, io.EOF) { // nothing more now (a file at its end): wait, not spin
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		now, _ := timebase.Realtime.Now()
		for r := 0; r < n; r++ {
			v := vals[r*per : (r+1)*per]
			// The read time is the fallback time of a sample without a usable
			// kernel stamp: its index in the read keeps the samples of one read
			// apart (a read of n samples takes far longer than n ns, so reads
			// do not overlap).
			sc := scan{read: now + int64(r)}
			sc.ns, _ = d.buf.Timestamp(v)
			for i := range v {
				sc.vals[i], _ = d.buf.Value(i, v[i])
			}
			batch[r] = sc
		}
		q.Put(batch[:n])
	}
	return nil
}

// realtime moves a kernel timestamp to REALTIME: directly, through the
// clock source's model of its clock, or through monotonic_raw (the clock
// source's reference) in two steps (Translators.Realtime).
func (d *sensorBuffer) realtime(ns int64) (int64, bool) {
	ts, err := d.tr.Realtime(timebase.Timestamp{NS: ns, Domain: d.buf.Clock})
	return ts.NS, err == nil
}

// emit ships one sample. A sample whose timestamp cannot be moved to REALTIME
// (no clock model yet) is shipped at the time it was read, its kernel
// timestamp kept in kernel_ns, and counted.
func (d *sensorBuffer) emit(b *Batch, sc *scan) {
	f := make([]record.Field, 0, len(d.fields)+4)
	for i, name := range d.fields {
		if name != "" {
			f = append(f, record.Int(name, sc.vals[i]))
		}
	}
	t := sc.read
	if sc.ns != 0 {
		if rt, ok := d.realtime(sc.ns); ok {
			t = rt
		} else {
			d.untranslated.Add(1)
			f = append(f, record.Int("kernel_ns", sc.ns))
		}
		if d.global != nil {
			var placed bool
			if f, placed = d.global.appendGlobal(f, d.toRaw, timebase.Timestamp{NS: sc.ns, Domain: d.buf.Clock}); !placed {
				d.unplaced.Add(1)
			}
		}
	}
	b.Add("sensor_scan", t, d.tags, f...)
}
