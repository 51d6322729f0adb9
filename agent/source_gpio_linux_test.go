package agent

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// epoch is the fake REALTIME of monotonic_raw 0.
const epoch = int64(1_700_000_000_000_000_000)

// fakeModels returns translators as the clock source keeps them: monotonic
// = monotonic_raw + 1000 ns, REALTIME = monotonic_raw + epoch, each from
// samples read within 20 ns; and, when phc, PHC 0 = REALTIME + 37 s.
func fakeModels(phc bool) *timebase.Translators {
	tr := timebase.NewTranslators()
	add := func(from, to timebase.Domain, off int64) {
		t := tr.Get(from, to, 8)
		for _, x := range []int64{1e9, 2e9, 3e9} {
			t.Add(timebase.Sample{Local: x, Ref: x + off, DelayNS: 20})
		}
	}
	add(timebase.DomainMonotonicRaw, timebase.DomainMonotonic, 1000)
	add(timebase.DomainMonotonicRaw, timebase.DomainRealtime, epoch)
	if phc {
		add(timebase.DomainRealtime, timebase.PHC(0), 37e9)
	}
	return tr
}

// gpioFixture is a source over a replayed FIFO, its event source running.
type gpioFixture struct {
	t    *testing.T
	d    *gpioSource
	s    *collect.EventSource[gpioEdge]
	w    *os.File
	stop func()
}

func newGPIOFixture(t *testing.T, lines []GPIOLineConfig, tr *timebase.Translators, phc timebase.Domain, ring int) *gpioFixture {
	t.Helper()
	fifo := filepath.Join(t.TempDir(), "edges")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines, cc.Replay, cc.Ring = "gpiochip9", lines, fifo, ring
	d, err := newGPIOSource(cc, lines, "/dev/gpiochip9", tr, phc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("gpio:gpiochip9", time.Second, ring, d)
	if err != nil {
		t.Fatal(err)
	}
	stopRun := collecttest.Start(s)
	// Opening the FIFO for writing waits for the producer's reader.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		stopRun()
		t.Fatal(err)
	}
	f := &gpioFixture{t: t, d: d, s: s, w: w, stop: func() { stopRun(); w.Close() }}
	t.Cleanup(f.stop)
	return f
}

// write feeds the events and waits until the producer has queued them.
func (f *gpioFixture) write(evs ...gpio.Event) {
	f.t.Helper()
	var b []byte
	for _, e := range evs {
		b = gpio.AppendEvent(b, e)
	}
	want := f.s.Queue().Received() + uint64(len(evs))
	if _, err := f.w.Write(b); err != nil {
		f.t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.s.Queue().Received() < want {
		if time.Now().After(deadline) {
			f.t.Fatalf("producer queued %d events, want %d", f.s.Queue().Received(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *gpioFixture) collect() []record.Record {
	f.t.Helper()
	b := &collect.Batch{Host: "h"}
	if err := f.s.Collect(context.Background(), b); err != nil {
		f.t.Fatalf("Collect: %v", err)
	}
	return b.Records
}

func gpioField(t *testing.T, r record.Record, key string) record.Field {
	t.Helper()
	f, ok := r.Field(key)
	if !ok {
		t.Fatalf("%s %v: no field %s", r.Measurement, r.Tags, key)
	}
	return f
}

func TestGPIOSourceShipsEdgesAtTheirTranslatedTimes(t *testing.T) {
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(17, "pps_in", "monotonic"), gpioLineCfg(18, "", "monotonic")},
		fakeModels(true), timebase.PHC(0), 4096)
	now, _ := timebase.Monotonic.Now()
	// Line 17 lost edges 3 and 4 in the kernel; line 18 none.
	f.write(
		gpio.Event{TimestampNS: now - 5e6, Offset: 17, Seqno: 1, LineSeqno: 1, Edge: gpio.EdgeRising},
		gpio.Event{TimestampNS: now - 4e6, Offset: 18, Seqno: 2, LineSeqno: 1, Edge: gpio.EdgeFalling},
		gpio.Event{TimestampNS: now - 3e6, Offset: 17, Seqno: 3, LineSeqno: 2, Edge: gpio.EdgeFalling},
		gpio.Event{TimestampNS: now - 2e6, Offset: 17, Seqno: 6, LineSeqno: 5, Edge: gpio.EdgeRising},
	)
	recs := f.collect()
	if len(recs) != 4 {
		t.Fatalf("%d records, want 4: %v", len(recs), recs)
	}
	wantLine := []string{"17", "18", "17", "17"}
	wantName := []string{"pps_in", "line18", "pps_in", "pps_in"}
	wantEdge := []string{"rising", "falling", "falling", "rising"}
	wantSeq := []uint64{1, 1, 2, 5}
	for i, r := range recs {
		k := gpioField(t, r, "kernel_ns").I
		if r.Measurement != "gpio_event" || r.TimeNS != k-1000+epoch {
			t.Errorf("record %d: %s at %d, want gpio_event at kernel_ns %d - 1000 + epoch", i, r.Measurement, r.TimeNS, k)
		}
		if r.Tag("chip") != "gpiochip9" || r.Tag("line") != wantLine[i] || r.Tag("name") != wantName[i] || r.Tag("edge") != wantEdge[i] {
			t.Errorf("record %d tags %v, want line %s name %s edge %s", i, r.Tags, wantLine[i], wantName[i], wantEdge[i])
		}
		if got := gpioField(t, r, "line_seqno").U; got != wantSeq[i] {
			t.Errorf("record %d: line_seqno %d, want %d", i, got, wantSeq[i])
		}
		if c := gpioField(t, r, "clock").S; c != "monotonic" {
			t.Errorf("record %d: clock %q", i, c)
		}
		// Two models, each read within 20 ns: at least 2 x 10 ns.
		if u := gpioField(t, r, "uncertainty_ns").I; u < 20 || u > 1e6 {
			t.Errorf("record %d: uncertainty_ns %d, want [20 ns, 1 ms]", i, u)
		}
		if p := gpioField(t, r, "phc_ns").I; p != r.TimeNS+37e9 {
			t.Errorf("record %d: phc_ns %d, want REALTIME + 37 s = %d", i, p, r.TimeNS+37e9)
		}
	}
	if got := f.s.Queue().KernelLost(); got != 2 {
		t.Errorf("kernel_lost %d, want 2", got)
	}
	if got := collecttest.Self(t, f.s, "line17_lost").U; got != 2 {
		t.Errorf("line17_lost %d, want 2", got)
	}
	if got := collecttest.Self(t, f.s, "line18_lost").U; got != 0 {
		t.Errorf("line18_lost %d, want 0", got)
	}
	if got := collecttest.Self(t, f.s, "line17_events").U; got != 3 {
		t.Errorf("line17_events %d, want 3", got)
	}
	// Latency: stamped 5, 3 and 2 ms before the write, read after it.
	p50, p99, mx := collecttest.Self(t, f.s, "line17_latency_p50_ns").I, collecttest.Self(t, f.s, "line17_latency_p99_ns").I, collecttest.Self(t, f.s, "line17_latency_max_ns").I
	if mx < 5e6 || mx > 5e6+5e9 || p99 != mx || p50 < 3e6 || p50 >= mx || collecttest.Self(t, f.s, "line17_latency_samples").I != 3 {
		t.Errorf("line 17 latency p50 %d p99 %d max %d, want p50 ≈ 3 ms < p99 = max ≈ 5 ms", p50, p99, mx)
	}
	// An interval without edges keeps them; the next with edges replaces them.
	f.s.Collect(context.Background(), &collect.Batch{})
	if got := collecttest.Self(t, f.s, "line17_latency_max_ns").I; got != mx {
		t.Errorf("latency max %d after an empty interval, want %d kept", got, mx)
	}
	now, _ = timebase.Monotonic.Now()
	f.write(gpio.Event{TimestampNS: now, Offset: 17, Seqno: 7, LineSeqno: 6, Edge: gpio.EdgeFalling})
	f.collect()
	if n, got := collecttest.Self(t, f.s, "line17_latency_samples").I, collecttest.Self(t, f.s, "line17_latency_max_ns").I; n != 1 || got >= mx {
		t.Errorf("latency over %d edges, max %d; want 1 edge, below the previous interval's %d", n, got, mx)
	}
}

func TestGPIOSourceRealtimeStampsAndEqualTimes(t *testing.T) {
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(3, "trig", "realtime")}, timebase.NewTranslators(), timebase.DomainUnknown, 4096)
	rt, _ := timebase.Realtime.Now()
	f.write(
		gpio.Event{TimestampNS: rt, Offset: 3, Seqno: 1, LineSeqno: 1, Edge: gpio.EdgeRising},
		gpio.Event{TimestampNS: rt, Offset: 3, Seqno: 2, LineSeqno: 2, Edge: gpio.EdgeFalling},
		gpio.Event{TimestampNS: rt + 10, Offset: 3, Seqno: 3, LineSeqno: 3, Edge: gpio.EdgeRising},
	)
	recs := f.collect()
	want := []int64{rt, rt + 1, rt + 10}
	for i, r := range recs {
		if r.TimeNS != want[i] || gpioField(t, r, "uncertainty_ns").I != 0 || gpioField(t, r, "clock").S != "realtime" {
			t.Errorf("record %d at %d (%v), want %d, uncertainty 0", i, r.TimeNS, r.Fields, want[i])
		}
		if _, ok := r.Field("phc_ns"); ok {
			t.Errorf("record %d has phc_ns without a PHC configured", i)
		}
	}
	if len(recs) != 3 || collecttest.Self(t, f.s, "time_bumps").U != 1 {
		t.Errorf("%d records, %d bumps, want 3 and 1", len(recs), collecttest.Self(t, f.s, "time_bumps").U)
	}
}

func TestGPIOSourceWithoutModelShipsAtReadTimeAndCounts(t *testing.T) {
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(5, "", "monotonic")}, timebase.NewTranslators(), timebase.PHC(0), 4096)
	before, _ := timebase.Realtime.Now()
	f.write(gpio.Event{TimestampNS: 42, Offset: 5, Seqno: 1, LineSeqno: 1, Edge: gpio.EdgeRising},
		gpio.Event{TimestampNS: 43, Offset: 5, Seqno: 2, LineSeqno: 2, Edge: gpio.EdgeRising},
		gpio.Event{TimestampNS: 44, Offset: 9, Seqno: 3, LineSeqno: 1, Edge: gpio.EdgeRising}) // not configured
	after, _ := timebase.Realtime.Now()
	recs := f.collect()
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2 (the unlisted line's edge counted, not shipped)", len(recs))
	}
	for i, r := range recs {
		if r.TimeNS < before || r.TimeNS > after+1 || gpioField(t, r, "kernel_ns").I != int64(42+i) {
			t.Errorf("record %d at %d, want the read time in [%d, %d] and kernel_ns %d", i, r.TimeNS, before, after, 42+i)
		}
		if _, ok := r.Field("uncertainty_ns"); ok {
			t.Errorf("an untranslated record claims an uncertainty")
		}
	}
	if recs[0].TimeNS == recs[1].TimeNS {
		t.Errorf("two edges at one time %d", recs[0].TimeNS)
	}
	for k, want := range map[string]uint64{"untranslated": 2, "phc_untranslated": 2, "unlisted": 1} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("%s %d, want %d", k, got, want)
		}
	}
}

func TestGPIOSourceCountsRingOverflow(t *testing.T) {
	f := newGPIOFixture(t, []GPIOLineConfig{gpioLineCfg(1, "", "realtime")}, timebase.NewTranslators(), timebase.DomainUnknown, 4)
	var evs []gpio.Event
	for i := 1; i <= 10; i++ {
		evs = append(evs, gpio.Event{TimestampNS: int64(i) * 1000, Offset: 1, Seqno: uint32(i), LineSeqno: uint32(i), Edge: gpio.EdgeRising})
	}
	f.write(evs...)
	recs := f.collect()
	q := f.s.Queue()
	if len(recs) != 4 || q.RingDropped() != 6 || q.Received() != 10 || q.KernelLost() != 0 {
		t.Errorf("%d records, ring dropped %d, received %d, kernel lost %d; want 4, 6, 10, 0",
			len(recs), q.RingDropped(), q.Received(), q.KernelLost())
	}
}

func TestGPIOReplayIsReadOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "capture")
	var b []byte
	for i := 1; i <= 3; i++ {
		b = gpio.AppendEvent(b, gpio.Event{TimestampNS: int64(i), Offset: 2, Seqno: uint32(i), LineSeqno: uint32(i), Edge: gpio.EdgeRising})
	}
	b = append(b, 1, 2, 3) // a capture cut inside an event
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines, cc.Replay = "gpiochip0", []GPIOLineConfig{gpioLineCfg(2, "", "realtime")}, file
	d, err := newGPIOSource(cc, cc.Lines, "", timebase.NewTranslators(), timebase.DomainUnknown)
	if err != nil {
		t.Fatal(err)
	}
	s, err := collect.Decode("gpio:gpiochip0", time.Second, 16, d)
	if err != nil {
		t.Fatal(err)
	}
	s.SetMaxBackoff(time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	s.Run(ctx) // returns when ctx is done
	if got := s.Queue().Received(); got != 3 {
		t.Errorf("received %d events from a capture of 3 read once", got)
	}
	if got := collecttest.Self(t, s, "read_errors").U; got != 1 {
		t.Errorf("read_errors %d, want 1 (the cut event)", got)
	}
}

// gpioPipeline is the agent's per-edge path without the kernel: the batch
// decode of a read, the ring, and the placement of each edge at its stamp
// moved to REALTIME through two clock models (MONOTONIC -> monotonic_raw ->
// REALTIME).
type gpioPipeline struct {
	d     *gpioSource
	s     *collect.EventSource[gpioEdge]
	raw   []byte
	evs   []gpio.Event
	batch []gpioEdge
	out   []gpioEdge
}

func newGPIOPipeline(tb testing.TB, events int) *gpioPipeline {
	cc := entryDefaults[GPIOChipConfig]()
	cc.Chip, cc.Lines = "gpiochip0", []GPIOLineConfig{gpioLineCfg(17, "pps_in", "monotonic"), gpioLineCfg(18, "drdy", "monotonic")}
	d, err := newGPIOSource(cc, cc.Lines, "/dev/gpiochip0", fakeModels(false), timebase.DomainUnknown)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := collect.Decode("gpio:gpiochip0", time.Second, 4096, d)
	if err != nil {
		tb.Fatal(err)
	}
	p := &gpioPipeline{d: d, s: s, evs: make([]gpio.Event, events), batch: make([]gpioEdge, events), out: make([]gpioEdge, events)}
	for i := 0; i < events; i++ {
		p.raw = gpio.AppendEvent(p.raw, gpio.Event{TimestampNS: 5e9 + int64(i)*1000, Offset: 17 + uint32(i%2),
			Seqno: uint32(i + 1), LineSeqno: uint32(i/2 + 1), Edge: gpio.Edge(1 + i/2%2)})
	}
	return p
}

// run passes one read's batch through decode, ring and placement, and hands
// each placed edge to each (nil: none).
func (p *gpioPipeline) run(tb testing.TB, each func(e *gpioEdge)) {
	n, err := gpio.DecodeEvents(p.evs, p.raw, gpio.ClockMonotonic)
	if err != nil || n != len(p.evs) {
		tb.Fatalf("decoded %d: %v", n, err)
	}
	for i := range p.evs[:n] {
		p.batch[i] = gpioEdge{ev: p.evs[i], read: p.evs[i].TimestampNS + 1000, readRT: int64(i)}
	}
	p.s.Queue().Put(p.batch[:n])
	got := p.s.Queue().Get(p.out)
	for i := range p.out[:got] {
		if each != nil {
			each(&p.out[i])
			continue
		}
		if l, _, _, ok := p.d.place(&p.out[i]); l == nil || !ok {
			tb.Fatalf("edge %d not placed", i)
		}
	}
}

// The per-edge path from the read to the record's time does not allocate.
func TestGPIODecodeRingPlaceDoesNotAllocate(t *testing.T) {
	p := newGPIOPipeline(t, 64)
	if a := testing.AllocsPerRun(100, func() { p.run(t, nil) }); a != 0 {
		t.Fatalf("%.1f allocations per batch of 64 edges, want 0", a)
	}
	if p.d.untranslated != 0 || p.s.Queue().RingDropped() != 0 {
		t.Fatalf("untranslated %d, ring dropped %d", p.d.untranslated, p.s.Queue().RingDropped())
	}
}

// BenchmarkGPIOEdges: ns and allocations per edge (b.N edges, in reads of
// 256): decode + ring + translation, then the same with the gpio_event record
// built and encoded as line protocol.
func BenchmarkGPIOEdges(b *testing.B) {
	const batch = 256
	b.Run("decode+ring+translate", func(b *testing.B) {
		p := newGPIOPipeline(b, batch)
		b.ReportAllocs()
		b.ResetTimer()
		done := 0
		for ; done < b.N; done += batch {
			p.run(b, nil)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/edge")
	})
	b.Run("decode+ring+translate+lineprotocol", func(b *testing.B) {
		p := newGPIOPipeline(b, batch)
		bt := &collect.Batch{Host: "bbb"}
		var enc record.Encoder
		var buf []byte
		emit := func(e *gpioEdge) { p.d.Emit(bt, e) }
		b.ReportAllocs()
		b.ResetTimer()
		done := 0
		for ; done < b.N; done += batch {
			p.run(b, emit)
			buf, _, _ = enc.Append(buf[:0], bt.Records)
			bt.Records = bt.Records[:0]
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(done), "ns/edge")
	})
}

// Translators.Move finds the chain of kept models: directly, through
// monotonic_raw, through REALTIME, or through both; and says when none does.
func TestTranslatorsMove(t *testing.T) {
	tr := fakeModels(true) // raw->mono +1000, raw->realtime +epoch, realtime->phc0 +37 s
	noModel := timebase.NewTranslators()
	noModel.Get(timebase.DomainMonotonicRaw, timebase.DomainRealtime, 8) // no sample yet
	for _, c := range []struct {
		name string
		tr   *timebase.Translators
		from timebase.Domain
		to   timebase.Domain
		want int64 // from 10 s; -1: an error
	}{
		{"same domain", tr, timebase.DomainMonotonic, timebase.DomainMonotonic, 10e9},
		{"direct", tr, timebase.DomainMonotonicRaw, timebase.DomainRealtime, 10e9 + epoch},
		{"inverse", tr, timebase.DomainRealtime, timebase.DomainMonotonicRaw, 10e9 - epoch},
		{"through raw", tr, timebase.DomainMonotonic, timebase.DomainRealtime, 10e9 - 1000 + epoch},
		{"through raw and realtime", tr, timebase.DomainMonotonic, timebase.PHC(0), 10e9 - 1000 + epoch + 37e9},
		{"back from the PHC", tr, timebase.PHC(0), timebase.DomainMonotonic, 10e9 - 37e9 - epoch + 1000},
		{"no model of that PHC", tr, timebase.DomainMonotonic, timebase.PHC(1), -1},
		{"no clock source", noModel, timebase.DomainMonotonic, timebase.DomainRealtime, -1},
		{"model without samples", noModel, timebase.DomainMonotonicRaw, timebase.DomainRealtime, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.tr.Move(timebase.Timestamp{NS: 10e9, Domain: c.from}, c.to)
			if c.want == -1 {
				if err == nil {
					t.Fatalf("moved to %v, want an error", got)
				}
				return
			}
			if err != nil || got.NS != c.want || got.Domain != c.to {
				t.Fatalf("got %v, %v; want %d in %s", got, err, c.want, c.to)
			}
			if c.from != c.to && got.UncertaintyNS <= 0 {
				t.Errorf("a translated time without uncertainty: %v", got)
			}
		})
	}
}
