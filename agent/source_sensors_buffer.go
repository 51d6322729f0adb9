package agent

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// scan is one buffered sample as the reader hands it to the shipper.
type scan = sensors.Scan

// sensorBuffer is the decoder of an IIO buffer event source: its producer
// drains the character device in batches into the ring, and each collection
// ships one record per sample at the kernel's timestamp moved to REALTIME
// (OpenBuffer enables the timestamp channel where the device has one);
// without one, at the time its read gives it, which it says
// (time_source=read) with its bound (uncertainty_ns).
type sensorBuffer struct {
	buf    *sensors.Buffer
	tr     *timebase.Translators
	tags   collect.HostTags // device, node, clock
	fields []string         // per value of a scan: the channel's field name
	slab   collect.Slab     // the scans' fields (collection goroutine)

	untranslated atomic.Uint64
	unstamped    atomic.Uint64
	// The global timeline (nil without the hca section); toRaw is the
	// collection goroutine's route from the buffer's clock to MONOTONIC_RAW.
	global   *hca.Global
	toRaw    *timebase.Route
	unplaced atomic.Uint64
	times    record.SeriesTime // the collection goroutine's: no two records share a time
	counts   record.TimeCounts
}

func buildSensorBuffers(env *Env) ([]collect.Source, error) {
	c := env.Config
	fs := sensors.NewFS(c.Paths.Sys, c.Paths.Dev)
	return buildEach("sensors.buffers", c.Sensors.Buffers, func(bc SensorBufferConfig) ([]collect.Source, error) {
		return one(newSensorBufferSource(fs, bc, env.Translators, env.Global))
	})
}

func newSensorBufferSource(fs sensors.FS, bc SensorBufferConfig, tr *timebase.Translators, global *hca.Global) (*collect.EventSource[scan], error) {
	dev, err := fs.FindIIODevice(bc.Device)
	if err != nil {
		return nil, err
	}
	if bc.Ring < 1 || bc.Ring&(bc.Ring-1) != 0 {
		return nil, fmt.Errorf("ring: %d is not a power of two", bc.Ring)
	}
	b, err := fs.OpenBuffer(dev, bc.Channels, bc.Length)
	if err != nil {
		return nil, err
	}
	if tr == nil {
		tr = timebase.NewTranslators()
	}
	d := &sensorBuffer{buf: b, tr: tr, global: global, toRaw: tr.Route(b.Clock, timebase.DomainMonotonicRaw),
		fields: b.ValueChannels(), // values in the kind's unit; raw for types without one
		tags:   collect.NewFixedHostTags([]record.Tag{{Key: "device", Value: dev.Name}, {Key: "node", Value: dev.Node}, {Key: "clock", Value: b.Clock.String()}})}
	d.slab = collect.NewSlab(len(d.fields)+scanExtraFields, slabRecords)
	s, err := collect.NewEventSource(collect.EventSourceConfig[scan]{
		Name: "sensor_buffer:" + dev.Node, Interval: time.Second, Ring: bc.Ring,
		Producer: collect.ProducerFunc[scan](d.produce), Emit: d.emit, Close: b.Close,
		Self: func() []record.Field {
			return []record.Field{record.Uint("untranslated", d.untranslated.Load()), record.Uint("unplaced", d.unplaced.Load()),
				record.Uint("unstamped", d.unstamped.Load()), record.Uint("time_bumps", d.counts.Bumps),
				record.Uint("time_unchecked", d.counts.Unchecked)}
		},
	})
	if err != nil {
		b.Close()
		return nil, err
	}
	return s, nil
}

// produce pumps the buffer into the queue (sensors.Buffer.Pump: at the
// stop, what the buffer still holds too), paced so that a read takes a
// batch of the kernel's buffer, not one scan; a device error ends it (the
// event source counts it and runs it again after a back-off).
func (d *sensorBuffer) produce(ctx context.Context, q *collect.EventQueue[scan]) error {
	pace := collect.Pacer{Capacity: d.buf.Length()}
	return d.buf.Pump(ctx, func(s []scan) {
		q.Put(s)
		pace.Pause(ctx, len(s), d.buf.Drained()) // the next read takes a batch
	})
}

// emit ships one sample at its kernel timestamp moved to REALTIME
// (time_source=kernel). A sample without one (a buffer without a timestamp
// channel, or a driver that gave none: counted unstamped) or whose stamp
// cannot be moved (no clock model yet: counted untranslated, the stamp kept
// in kernel_ns) ships at the time its read gives it (time_source=read),
// from a buffer without a timestamp channel with that time's bound in
// uncertainty_ns. A time the series already has moves to the first free
// nanosecond after it (counted in time_bumps, the stamp kept in kernel_ns).
func (d *sensorBuffer) emit(b *collect.Batch, sc *scan) {
	// The fields come from a slab shared by many records (one allocation
	// per slabRecords scans), the tags are shared by all.
	f := d.slab.Next()
	for i, name := range d.fields {
		f = append(f, record.Int(name, sc.Values[i]))
	}
	stamp := sc.Stamp
	if !d.buf.Stamped() {
		stamp = 0
	}
	t, source, keep := sc.Read, "read", false
	if stamp == 0 {
		d.unstamped.Add(1)
	} else {
		// Directly, through the clock source's model of the buffer's clock,
		// or through monotonic_raw (its reference) in two steps.
		if rt, err := d.tr.Realtime(timebase.Timestamp{NS: stamp, Domain: d.buf.Clock}); err == nil {
			t, source = rt.NS, "kernel"
		} else {
			d.untranslated.Add(1)
			keep = true
		}
		if d.global != nil {
			var placed bool
			if f, placed = appendGlobal(d.global, f, d.toRaw, timebase.Timestamp{NS: stamp, Domain: d.buf.Clock}); !placed {
				d.unplaced.Add(1)
			}
		}
	}
	at := d.times.Place(t, &d.counts)
	if stamp != 0 && (keep || at != t) {
		f = append(f, record.Int("kernel_ns", stamp))
	}
	f = append(f, record.String("time_source", source))
	if !d.buf.Stamped() {
		// The sample reached the buffer after sc.Stamp, its window's
		// opening, and before its read returned; at is at least the
		// window's middle, so it is within at-sc.Stamp of the sample.
		f = append(f, record.Int("uncertainty_ns", at-sc.Stamp))
	}
	b.Records = append(b.Records, record.Record{Measurement: "sensor_scan", Tags: d.tags.Of(b.Host, 0), Fields: d.slab.Keep(f), TimeNS: at})
}

// scanExtraFields is the most fields of a sensor_scan record besides its
// values: hca_local_ns, global_ns, global_bound_ns, kernel_ns, time_source,
// uncertainty_ns.
const scanExtraFields = 6
