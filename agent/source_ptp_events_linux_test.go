package agent

import (
	"context"
	"testing"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/phc/phctest"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// With hardware timestamping ptp4l's t2 and t3 are its PHC's time (TAI on a
// PTP network: 37 s ahead of REALTIME on the scripted machine). Each
// ptp4l_sync / ptp4l_delay record is dated in REALTIME through the phc
// source's model of that PHC, within the uncertainty it carries, t2_ns /
// t3_ns keeping ptp4l's stamp; before the phc source has a model, a record
// is dated by the read of its datagram and counted untranslated. Before,
// every record was dated by the PHC's stamp itself: 37 s off every other
// record.
func TestSlaveEventsUnderHardwareTimestampingAtTheirRealtime(t *testing.T) {
	p, tr, cfg := phctest.New(), timebase.NewTranslators(), Default().PHC
	p.PHCNS = p.Now(timebase.DomainRealtime) + 37e9 // TAI
	s := scriptedPHCSource(p, cfg, tr)
	d := newPtp4lSlaveEvents(nil, ptp.DefaultDelayFilterLength, p.Dom, tr)
	var master ptp.SlaveTiming
	master.Master.ClockIdentity = 0x0102030405060708
	master.Master.PortNumber = 1
	seq := uint16(0)
	// emit hands the decoder a Sync and a Delay_Req ptp4l stamped now
	// (PHC), its datagram read 50 µs later, and returns their records.
	emit := func() (sync, delay record.Record, now int64) {
		t.Helper()
		b := &collect.Batch{Host: "h"}
		now = p.Now(timebase.DomainRealtime)
		t2 := p.PHCNS
		seq++
		e := slaveEvent{SlaveTiming: master, read: now + 50e3}
		e.Kind, e.Seq, e.TxNS, e.RxNS = ptp.SlaveSync, seq, t2-37e9-500, t2
		d.Emit(b, &e)
		e.Kind, e.TxNS, e.RxNS = ptp.SlaveDelay, t2+1e6, t2-37e9+1e6+600
		d.Emit(b, &e)
		ss, ds := records(b, "ptp4l_sync"), records(b, "ptp4l_delay")
		if len(ss) != 1 || len(ds) != 1 {
			t.Fatalf("%d ptp4l_sync and %d ptp4l_delay records, want one each", len(ss), len(ds))
		}
		if got, _ := fieldInt(ss[0], "t2_ns"); got != t2 {
			t.Errorf("t2_ns %d, want ptp4l's stamp %d", got, t2)
		}
		if got, _ := fieldInt(ds[0], "t3_ns"); got != t2+1e6 {
			t.Errorf("t3_ns %d, want ptp4l's stamp %d", got, t2+1e6)
		}
		return ss[0], ds[0], now
	}

	// No model yet: at the read, counted.
	sy, de, now := emit()
	for _, r := range []record.Record{sy, de} {
		if d := r.TimeNS - (now + 50e3); d < 0 || d > 1 {
			t.Errorf("%s without a model at %d, want its read %d", r.Measurement, r.TimeNS, now+50e3)
		}
		if _, ok := r.Field("uncertainty_ns"); ok {
			t.Errorf("%s: an untranslated record claims an uncertainty", r.Measurement)
		}
	}
	if n := d.untranslated; n != 2 {
		t.Errorf("untranslated %d, want 2", n)
	}

	// The phc source keeps its model; every record is then at its REALTIME.
	for range cfg.Window {
		if err := s.Collect(context.Background(), &collect.Batch{Host: "h"}); err != nil {
			t.Fatal(err)
		}
		p.Advance(int64(cfg.Interval))
	}
	for i := range 5 {
		sy, de, now := emit()
		for j, r := range []record.Record{sy, de} {
			want := now + int64(j)*1e6 // the Delay_Req 1 ms after the Sync
			u, ok := fieldInt(r, "uncertainty_ns")
			if e := r.TimeNS - want; !ok || u <= 0 || max(e, -e) > u+100 {
				t.Errorf("%d: %s at %d, %d ns from its REALTIME %d; uncertainty %d (carried: %v)", i, r.Measurement, r.TimeNS, e, want, u, ok)
			}
		}
		p.Advance(int64(cfg.Interval))
		s.Collect(context.Background(), &collect.Batch{Host: "h"})
	}
	if n := d.untranslated; n != 2 {
		t.Errorf("untranslated %d, want still 2", n)
	}
}

// With software timestamping t2 and t3 are already REALTIME: the records
// are at them exactly, with no model and nothing counted.
func TestSlaveEventsUnderSoftwareTimestampingAtTheirStamps(t *testing.T) {
	d := newPtp4lSlaveEvents(nil, ptp.DefaultDelayFilterLength, timebase.DomainRealtime, timebase.NewTranslators())
	const t2 = 1_700_000_000_123_456_789
	b := &collect.Batch{Host: "h"}
	e := slaveEvent{SlaveTiming: ptp.SlaveTiming{Kind: ptp.SlaveSync, Seq: 1, TxNS: t2 - 500, RxNS: t2}, read: t2 + 80e3}
	d.Emit(b, &e)
	e.SlaveTiming = ptp.SlaveTiming{Kind: ptp.SlaveDelay, Seq: 1, TxNS: t2 + 1e6, RxNS: t2 + 1e6 + 600}
	d.Emit(b, &e)
	if len(b.Records) != 2 || b.Records[0].TimeNS != t2 || b.Records[1].TimeNS != t2+1e6 {
		t.Fatalf("records %+v, want at t2 %d and t3 %d", b.Records, int64(t2), int64(t2+1e6))
	}
	for _, r := range b.Records {
		if _, ok := r.Field("uncertainty_ns"); ok {
			t.Errorf("%s: a REALTIME stamp given an uncertainty", r.Measurement)
		}
	}
	if n := d.untranslated; n != 0 {
		t.Errorf("untranslated %d, want 0", n)
	}
}
