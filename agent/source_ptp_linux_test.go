package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// TestPHCToRealtime: the probe's hardware timestamps go through the model the
// phc source keeps; without one they are refused, with a reason.
func TestPHCToRealtime(t *testing.T) {
	trs := timebase.NewTranslators()
	dom := timebase.PHC(3)
	f := trs.ToRealtime(dom)
	if _, err := f(1_000); err == nil || !strings.Contains(err.Error(), "enable the phc source") {
		t.Fatalf("no model: %v", err)
	}
	// The phc source's samples: REALTIME local, the PHC (on TAI, 37 s ahead)
	// as reference.
	tr := trs.Get(timebase.DomainRealtime, dom, 8)
	for i := int64(0); i < 4; i++ {
		rt := 1_700_000_000_000_000_000 + i*1_000_000_000
		tr.Add(timebase.Sample{Local: rt, Ref: rt + 37_000_000_000, DelayNS: 100})
	}
	phcNS := int64(1_700_000_002_500_000_000 + 37_000_000_000)
	got, err := f(phcNS)
	if want := int64(1_700_000_002_500_000_000); err != nil || got < want-2 || got > want+2 {
		t.Fatalf("translated %d (%v), want %d", got, err, want)
	}
}

// TestPTPProbeHardwareNeedsAPHC: hardware timestamps on an interface without
// a PHC (lo) are one error naming the key.
func TestPTPProbeHardwareNeedsAPHC(t *testing.T) {
	c := Default()
	c.PTP.Enabled, c.PTP.Probe.Enabled, c.PTP.Probe.Interface, c.PTP.Probe.Timestamping = true, true, "lo", "hardware"
	_, err := buildPTPProbe(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: timebase.NewTranslators()})
	// On a kernel: lo has no PHC. Under qemu-user the ethtool ioctl itself is
	// not implemented, and the error says that instead, at the same key.
	if err == nil || !strings.Contains(err.Error(), "ptp.probe.interface: lo has no PTP hardware clock") &&
		!strings.Contains(err.Error(), "ptp.probe.interface: lo: ") {
		t.Fatalf("hardware timestamps on lo: %v", err)
	}
}

// fakeExchanges is a producer that puts exchanges into the queue, then
// waits for the end of the run.
func fakeExchanges(exs []ptp.Exchange) collect.Producer[ptp.Exchange] {
	return collect.ProducerFunc[ptp.Exchange](func(ctx context.Context, q *collect.EventQueue[ptp.Exchange]) error {
		for i := range exs {
			q.Put1(exs[i])
		}
		<-ctx.Done()
		return nil
	})
}

// runFor runs an event source's reader until the test ends.
func runFor(t *testing.T, s collect.Runner) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func fieldInt(r record.Record, key string) (int64, bool) {
	for _, f := range r.Fields {
		if f.Key == key {
			switch f.Kind {
			case record.KindInt:
				return f.I, true
			case record.KindUint:
				return int64(f.U), true
			}
		}
	}
	return 0, false
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPTPProbeRecordsAtTheirOwnTime: every ptp_probe record is stamped with
// its exchange's t2, not the collection time; two exchanges stamped alike
// (which a Sync per frame never gives, but a coarse clock could) stay two
// points, the later a nanosecond on; the stats record is the collection's.
func TestPTPProbeRecordsAtTheirOwnTime(t *testing.T) {
	base, _ := timebase.Realtime.Now()
	base -= 60e9 // a minute ago: far from the collection time
	var exs []ptp.Exchange
	for i := range 5 {
		exs = append(exs, ptp.Exchange{Seq: uint16(i), T1: base + int64(i)*1e9 - 10_000, T2: base + int64(i)*1e9, OffsetNS: int64(i)})
	}
	exs = append(exs, exs[4])
	exs[5].Seq = 5
	s, err := newPTPProbeSource(&ptp.Probe{}, 0, fakeExchanges(exs), nil)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, s)
	waitFor(t, "the exchanges", func() bool { return s.Queue().Received() == uint64(len(exs)) })
	b := &collect.Batch{}
	before, _ := timebase.Realtime.Now()
	if err := s.Collect(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	after, _ := timebase.Realtime.Now()
	var probe []record.Record
	seen := map[int64]bool{}
	for _, r := range b.Records {
		switch r.Measurement {
		case "ptp_probe":
			probe = append(probe, r)
			if seen[r.TimeNS] {
				t.Errorf("two ptp_probe records at %d", r.TimeNS)
			}
			seen[r.TimeNS] = true
		case "ptp_probe_stats":
			if r.TimeNS < before || r.TimeNS > after {
				t.Errorf("stats at %d, not the collection's [%d, %d]", r.TimeNS, before, after)
			}
		}
	}
	if len(probe) != len(exs) {
		t.Fatalf("%d ptp_probe records for %d exchanges", len(probe), len(exs))
	}
	for i, r := range probe {
		want := exs[i].T2
		if i == 5 {
			want++ // the same t2 as the one before: moved by 1 ns
		}
		if t2, _ := fieldInt(r, "t2_ns"); r.TimeNS != want || t2 != exs[i].T2 {
			t.Errorf("exchange %d at %d (t2_ns %d), want %d (t2 %d)", i, r.TimeNS, t2, want, exs[i].T2)
		}
	}
	if n, _ := fieldInt(record.Record{Fields: s.SelfFields()}, "time_bumps"); n != 1 {
		t.Errorf("time_bumps %d, want 1", n)
	}
}

// TestPTPProbeCountsRingDrops: exchanges the ring cannot hold (the shipper
// late) are counted in the source's self-metrics, never lost silently
// (before, a queue capped at 4096 dropped them without a trace).
func TestPTPProbeCountsRingDrops(t *testing.T) {
	const ring, put = 8, 21
	base, _ := timebase.Realtime.Now()
	exs := make([]ptp.Exchange, put)
	for i := range exs {
		exs[i] = ptp.Exchange{Seq: uint16(i), T2: base + int64(i)}
	}
	s, err := newPTPProbeSource(&ptp.Probe{}, ring, fakeExchanges(exs), nil)
	if err != nil {
		t.Fatal(err)
	}
	runFor(t, s)
	waitFor(t, "the exchanges", func() bool { return s.Queue().Received() == put })
	b := &collect.Batch{}
	if err := s.Collect(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	shipped := int64(0)
	for _, r := range b.Records {
		if r.Measurement == "ptp_probe" {
			shipped++
		}
	}
	self := record.Record{Fields: s.SelfFields()}
	dropped, _ := fieldInt(self, "ring_dropped")
	events, _ := fieldInt(self, "events")
	if events != put || shipped != ring || dropped != put-ring {
		t.Fatalf("events %d, shipped %d, ring_dropped %d; want %d = %d shipped + %d dropped", events, shipped, dropped, put, ring, put-ring)
	}
}

// TestPTPProbeSourceAgainstPtp4l: the source built against a real ptp4l
// master over a veth pair starts nothing until the agent runs it; run, it
// ships every exchange at its t2 in REALTIME (the clock the kernel stamped
// the Sync with), unique, and its self-metrics count every exchange.
func TestPTPProbeSourceAgainstPtp4l(t *testing.T) {
	// qemu-user has neither packet timestamps nor PTP's multicast options.
	if c, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{}); err == nil {
		opt, why := c.Option()
		c.Close()
		if opt == "none" {
			t.Skipf("no kernel packet timestamps here (%v): the probe is measured with them", why)
		}
	}
	master, host := testbed.NewLink(t)
	testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true})
	c := Default()
	c.PTP.Enabled, c.PTP.Probe.Enabled, c.PTP.Probe.Interface = true, true, host.If
	var srcs []collect.Source
	// The goroutines this goroutine starts, not runtime.NumGoroutine, which
	// counts every goroutine of the process (ptp4l's waiter, an earlier
	// test's still ending) as they come and go: a snapshot that moves with
	// the machine's timing, not with the source.
	before := goroutines()
	if err := host.Do(func() (err error) {
		srcs, err = buildPTPProbe(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: timebase.NewTranslators()})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	noneStartedHere(t, before, time.Second, "building the source left running (nothing may run before Agent.Run)")
	s := srcs[0]
	defer s.Close()
	rn, ok := s.(collect.Runner)
	if !ok {
		t.Fatal("the probe source has no Run for the agent to start")
	}
	start, _ := timebase.Realtime.Now()
	runFor(t, rn)
	var recs, all []record.Record
	deadline := time.Now().Add(40 * time.Second)
	for len(recs) < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Second)
		b := &collect.Batch{}
		s.Collect(context.Background(), b)
		all = append(all, b.Records...)
		for _, r := range b.Records {
			if r.Measurement == "ptp_probe" {
				recs = append(recs, r)
			}
		}
	}
	end, _ := timebase.Realtime.Now()
	if len(recs) < 8 {
		t.Fatalf("%d ptp_probe records in 40 s", len(recs))
	}
	checkRecordRules(t, all)
	seen := map[int64]bool{}
	for _, r := range recs {
		t2, _ := fieldInt(r, "t2_ns")
		off, _ := fieldInt(r, "offset_ns")
		if r.TimeNS != t2 || t2 < start || t2 > end || seen[r.TimeNS] {
			t.Errorf("record at %d, t2 %d: want its t2, in REALTIME within the run [%d, %d], once", r.TimeNS, t2, start, end)
		}
		seen[r.TimeNS] = true
		t.Logf("ptp_probe at %d = t2, offset %d ns", r.TimeNS, off)
	}
	self := record.Record{Fields: s.(collect.SelfReporter).SelfFields()}
	events, _ := fieldInt(self, "events")
	exchanges, _ := fieldInt(self, "exchanges")
	dropped, _ := fieldInt(self, "ring_dropped")
	if events != exchanges || events < int64(len(recs)) || dropped != 0 {
		t.Errorf("self-metrics: events %d, exchanges %d, ring_dropped %d, shipped %d", events, exchanges, dropped, len(recs))
	}
	t.Logf("%d exchanges shipped at their t2; self-metrics %v", len(recs), self.Fields)
}

// TestPtp4lSelfFieldsRaceFree: the ptp4l source's self-metrics may be read
// while it collects (run with -race). Against linuxptp 3.1, which has no
// PORT_SERVICE_STATS_NP, Collect sets the flag SelfFields reads.
func TestPtp4lSelfFieldsRaceFree(t *testing.T) {
	master, _ := testbed.NewLink(t)
	p := testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true})
	c := Default()
	c.PTP.Enabled, c.PTP.Ptp4l.First().Enabled, c.PTP.Ptp4l.First().Socket = true, true, p.Socket
	srcs, err := buildPtp4lSource(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: timebase.NewTranslators()})
	if err != nil {
		t.Fatal(err)
	}
	s := srcs[0].(*ptp4lSource)
	defer s.Close()
	waitFor(t, "ptp4l's management socket", func() bool { _, err := s.m.CurrentDataSet(t.Context()); return err == nil })
	_, serr := s.m.PortServiceStatsNP(t.Context())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				s.SelfFields()
			}
		}
	}()
	for range 3 {
		if err := s.Collect(context.Background(), &collect.Batch{}); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	<-done
	var unsupported bool
	for _, f := range s.SelfFields() {
		if f.Key == "port_service_stats_unsupported" {
			unsupported = f.Kind == record.KindBool && f.I != 0
		}
	}
	if want := errors.Is(serr, ptp.ErrUnsupported); unsupported != want {
		t.Errorf("port_service_stats_unsupported %v, want %v (%v)", unsupported, want, serr)
	}
}
