package agent

import (
	"context"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// slaveEvent is one record of ptp4l's slave event monitor as the reader
// hands it to the shipper.
type slaveEvent struct {
	ptp.SlaveTiming
	read int64 // REALTIME when its datagram was read
}

// ptp4lSlaveEvents is the decoder of ptp4l's slave event monitor: the
// socket monagent binds at ptp.ptp4l.event_monitor (ptp4l's
// slave_event_monitor), one ptp4l_sync record per Sync ptp4l used, at its
// t2, and one ptp4l_delay record per Delay_Req, at its t3: both stamps of
// ptp4l's own clock, REALTIME with software timestamping, its PHC with
// hardware timestamping, moved to REALTIME then through the phc source's
// model of that PHC (dom, toRT). The offsets are computed as ptp4l computes
// them (ptp.Offsets), from the stamps as ptp4l took them.
type ptp4lSlaveEvents struct {
	l       *ptp.SlaveEventListener
	offsets *ptp.Offsets
	dom     timebase.Domain // ptp4l's clock: a PHC, or DomainRealtime
	toRT    *timebase.Route // the collection goroutine's; nil with software timestamping

	// The collection goroutine's.
	times        [2]record.SeriesTime // sync, delay
	bumps        uint64
	untranslated uint64
	syncs        uint64
	delays       uint64
	tags         []record.Tag // inst and master
	inst         []record.Tag // instance=, for a named instance
	master       protocol.PortIdentity
	slab         collect.Slab
	readLatency  collect.Latency // read − t2: ptp4l's Sync stamp to monagent's read
	scratchStats [collect.LatencyCap]int64
}

// newPtp4lSlaveEvents decodes what l reads, stamped by ptp4l in dom:
// DomainRealtime (software timestamping) or the PHC ptp4l timestamps with,
// moved to REALTIME through the models tr keeps.
func newPtp4lSlaveEvents(l *ptp.SlaveEventListener, filterLength int, dom timebase.Domain, tr *timebase.Translators) *ptp4lSlaveEvents {
	d := &ptp4lSlaveEvents{l: l, offsets: ptp.NewOffsets(filterLength), slab: collect.NewSlab(8, 256), dom: dom}
	if dom != timebase.DomainRealtime {
		d.toRT = tr.Route(dom, timebase.DomainRealtime)
	}
	return d
}

// Produce reads the socket until ctx is done; each datagram's records go
// into the ring.
func (d *ptp4lSlaveEvents) Produce(ctx context.Context, q *collect.EventQueue[slaveEvent]) error {
	return d.l.Run(ctx, func(recs []ptp.SlaveTiming, read int64) {
		for i := range recs {
			q.Put1(slaveEvent{SlaveTiming: recs[i], read: read})
		}
	})
}

// Emit ships one record at its stamp in REALTIME: a PHC's stamp is moved
// through the phc source's model, the record carrying the model's
// uncertainty (uncertainty_ns); one that cannot be moved yet (no model) is
// shipped at the time its datagram was read, counted (untranslated). Two
// Syncs (or two Delay_Reqs) never share a stamp — each is a frame of its
// own, stamped by the kernel — and should a coarse clock ever stamp two
// alike, the later moves by a nanosecond (time_bumps; t2_ns/t3_ns keep the
// stamp as ptp4l took it).
func (d *ptp4lSlaveEvents) Emit(b *collect.Batch, e *slaveEvent) {
	if e.Master != d.master || d.tags == nil {
		d.master, d.tags = e.Master, withTags(d.inst, record.Tag{Key: "master", Value: e.Master.String()})
	}
	k, at := 0, e.RxNS // a Sync at t2, a Delay_Req at t3
	var x, y int64
	var ok bool
	switch e.Kind {
	case ptp.SlaveSync:
		d.syncs++
		x, y, ok = d.offsets.Sync(&e.SlaveTiming)
	case ptp.SlaveDelay:
		k, at = 1, e.TxNS
		d.delays++
		x, y, ok = d.offsets.Delay(&e.SlaveTiming)
	default:
		return
	}
	r := &slaveRecords[k]
	f := append(d.slab.Next(), record.Uint("sequence", uint64(e.Seq)), record.Int(r.tx, e.TxNS), record.Int(r.rx, e.RxNS),
		record.Int("correction_ns", e.CorrectionNS))
	if ok {
		f = append(f, record.Int(r.x, x), record.Int(r.y, y))
	}
	moved := true
	if d.toRT != nil {
		if rt, err := d.toRT.Move(timebase.Timestamp{NS: at, Domain: d.dom}); err == nil {
			at = rt.NS
			f = append(f, record.Int("uncertainty_ns", rt.UncertaintyNS))
		} else {
			at, moved = e.read, false
			d.untranslated++
		}
	}
	if k == 0 && moved {
		d.readLatency.Add(e.read - at)
	}
	b.Add(r.measurement, d.times[k].Next(at, &d.bumps), d.tags, d.slab.Keep(f)...)
}

// slaveRecords name a Sync's record and fields (t1, t2; the offset and path
// delay computed from it) and a Delay_Req's (t3, t4; the raw and filtered
// path delay).
var slaveRecords = [2]struct{ measurement, tx, rx, x, y string }{
	{"ptp4l_sync", "t1_ns", "t2_ns", "offset_ns", "path_delay_ns"},
	{"ptp4l_delay", "t3_ns", "t4_ns", "raw_delay_ns", "path_delay_ns"},
}

// After closes the interval's read-latency statistics.
func (d *ptp4lSlaveEvents) After(b *collect.Batch, events int) error {
	d.readLatency.Close(&d.scratchStats)
	return nil
}

// Self is the listener's counts beside the event source's.
func (d *ptp4lSlaveEvents) Self() []record.Field {
	f := []record.Field{
		record.Uint("syncs", d.syncs), record.Uint("delays", d.delays),
		record.Uint("datagrams", d.l.Datagrams.Load()), record.Uint("undecodable", d.l.Undecodable.Load()),
		record.Uint("unknown_tlvs", d.l.UnknownTLVs.Load()), record.Uint("time_bumps", d.bumps),
		record.Uint("untranslated", d.untranslated),
	}
	return d.readLatency.Fields(f, "sync_read_")
}

// Close releases the socket and removes its path.
func (d *ptp4lSlaveEvents) Close() error { return d.l.Close() }
