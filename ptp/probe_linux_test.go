package ptp

import (
	"context"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// slaveSample is one "master offset" line of a ptp4l log: the offset and
// when ptp4l printed it (its log prefix: CLOCK_MONOTONIC, ms resolution).
type slaveSample struct {
	monoMS, offset int64
}

// slaveSamples reads the per-Sync "master offset" lines of a ptp4l log.
func slaveSamples(log string) []slaveSample {
	re := regexp.MustCompile(`\[(\d+)\.(\d{3})\]: master offset\s+(-?\d+) s\d`)
	var out []slaveSample
	for _, l := range strings.Split(log, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			sec, _ := strconv.ParseInt(m[1], 10, 64)
			ms, _ := strconv.ParseInt(m[2], 10, 64)
			v, _ := strconv.ParseInt(m[3], 10, 64)
			out = append(out, slaveSample{sec*1000 + ms, v})
		}
	}
	return out
}

// monoMS is CLOCK_MONOTONIC in ms, the clock of ptp4l's log prefix.
func monoMS(t *testing.T) int64 {
	ns, err := timebase.Monotonic.Now()
	if err != nil {
		t.Fatal(err)
	}
	return ns / 1e6
}

func meanStd(v []int64) (float64, float64) {
	var m float64
	for _, x := range v {
		m += float64(x)
	}
	m /= float64(len(v))
	var s float64
	for _, x := range v {
		s += (float64(x) - m) * (float64(x) - m)
	}
	return m, math.Sqrt(s / float64(len(v)-1))
}

// TestProbeAgainstPtp4l: a ptp4l master in one namespace; across a veth pair,
// a free-running ptp4l slave and our probe side by side in the other (over UDP
// they share ports 319/320, as on a board that runs ptp4l). Both see the same
// frames on the same path; the namespaces share one clock: the true offset is
// 0. It runs once per transport, UDPv4 and IEEE 802.3, with ptp4l on the same.
//
// (An earlier version put the three on a bridge, each in a namespace of its
// own. The bridge floods multicast to its ports in turn, and on this VM a
// frame after a quiet spell takes ~15 us per hop against ~2 us warm, so the
// port order alone biased each slave by microseconds.)
//
// It checks that the probe measures (kernel timestamps, the master followed,
// the other slave's Delay_Resps refused) and holds it to the accuracy
// criterion against the ptp4l slave over the same Syncs.
func TestProbeAgainstPtp4l(t *testing.T) {
	needKernelTimestamps(t)
	for _, tc := range []struct {
		transport string
		listen    func(iface string) (*Probe, error)
	}{
		{"UDPv4", func(iface string) (*Probe, error) { return ListenUDP(UDPConfig{Interface: iface}) }},
		{"L2", func(iface string) (*Probe, error) { return ListenL2(L2Config{Interface: iface}) }},
	} {
		t.Run(tc.transport, func(t *testing.T) { probeAgainstPtp4l(t, tc.transport, tc.listen) })
	}
}

// probeExchanges is how many Syncs each run measures (1 Hz).
const probeExchanges = 40

func probeAgainstPtp4l(t *testing.T, transport string, listen func(string) (*Probe, error)) {
	master, host := testbed.NewLink(t)
	testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true, Transport: transport})
	// freq_est_interval 0: a free-running ptp4l prints its offset at every
	// Sync, not every other one.
	slave := testbed.StartPtp4l(t, host, testbed.Ptp4lOptions{Transport: transport, Extra: "freq_est_interval 0\n"})
	var p *Probe
	if err := host.Do(func() (err error) {
		p, err = listen(host.If)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	out := make(chan Exchange, 128)
	var slow atomic.Uint64 // exchanges this test could not take: none expected
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, func(ex *Exchange) {
			select {
			case out <- *ex:
			default:
				slow.Add(1)
			}
		})
	}()
	defer func() { cancel(); <-done }()
	var offs []int64
	var first, last int64 // CLOCK_MONOTONIC ms of the first and last exchange kept
	start := time.Now()
collect:
	for len(offs) < probeExchanges {
		select {
		case <-ctx.Done():
			break collect
		case ex := <-out:
			if time.Since(start) < 8*time.Second {
				continue // the master takes ~4 s to claim the role; let both settle
			}
			if last = monoMS(t); first == 0 {
				first = last
			}
			offs = append(offs, ex.OffsetNS)
			t.Logf("  exchange %2d: seq %5d offset %8d ns t2-t1 %8d ns path delay %7d ns (last %7d ns, t4-t3 %8d ns)",
				len(offs)-1, ex.Seq, ex.OffsetNS, ex.T2-ex.T1, ex.PathDelayNS, ex.DelayNS, ex.T4-ex.T3)

		}
	}
	// The free-running slave logs an offset every other second; drop its first
	// three (settling, as for the probe).
	// The ptp4l slave's offsets of the same Syncs: those it printed while the
	// probe's were collected (it prints a few ms after the Follow_Up).
	var ref []int64
	for _, r := range slaveSamples(slave.LogText()) {
		if r.monoMS >= first-500 && r.monoMS <= last+500 {
			ref = append(ref, r.offset)
		}
	}
	if len(offs) < probeExchanges || len(ref) < probeExchanges/2 {
		t.Fatalf("probe %d exchanges, ptp4l slave %d samples in the same window\n%s", len(offs), len(ref), slave.LogText())
	}
	st := p.Stats()
	m, s := meanStd(offs)
	rm, rs := meanStd(ref)
	t.Logf("%s multicast over a veth pair, 1 Hz sync, true offset 0:", transport)
	t.Logf("  %-26s %4s %10s %10s", "", "n", "mean", "std")
	t.Logf("  %-26s %4d %8.0f ns %8.0f ns", "monagent probe", len(offs), m, s)
	t.Logf("  %-26s %4d %8.0f ns %8.0f ns", "ptp4l slave (free_running)", len(ref), rm, rs)
	t.Logf("  rejects %v, dropped %d, master changes %d, bytes sent %d received %d, rx sources %d/%d/%d/%d tx %d/%d/%d/%d", st.Rejects, p.Dropped.Load(), st.MasterChanges, p.BytesSent.Load(), p.BytesReceived.Load(),
		p.RxSources[0].Load(), p.RxSources[1].Load(), p.RxSources[2].Load(), p.RxSources[3].Load(), p.TxSources[0].Load(), p.TxSources[1].Load(), p.TxSources[2].Load(), p.TxSources[3].Load())
	// The criterion: |mean| <= 1 us, std <= 1.2x the ptp4l slave's.
	// Both measure the same Syncs (one kernel timestamp per frame, shared by
	// every socket), so they differ only in their path delays and their
	// means must agree: a bias of the probe's own shows up as a difference
	// (before the send-only socket, -2.5 to -7 us). The path itself is not
	// symmetric to 1 us on this VM: the reference slave's own mean is off by
	// up to 1.6 us in some runs, and the probe's with it. So the absolute
	// bound is asserted where the path allows it (the reference within
	// 0.5 us), and reported always.
	t.Logf("  std ratio %.2f (bound 1.2), mean difference %.0f ns (bound 500), |mean| <= 1 us: probe %v, ptp4l slave %v",
		s/rs, m-rm, math.Abs(m) <= 1000, math.Abs(rm) <= 1000)
	if s > 1.2*rs {
		t.Errorf("probe std %.0f ns > 1.2 x the ptp4l slave's %.0f ns", s, rs)
	}
	if math.Abs(m-rm) > 500 {
		t.Errorf("probe mean %.0f ns is %.0f ns from the ptp4l slave's over the same Syncs: a bias of the probe's own", m, m-rm)
	}
	if math.Abs(m) > 1000 && math.Abs(rm) <= 500 {
		t.Errorf("probe |mean| %.0f ns > 1 us where the ptp4l slave's is %.0f ns", m, rm)
	}
	// A stalled path (this machine runs the other packages' tests meanwhile)
	// can spoil a few exchanges; the typical one must be right.
	far := 0
	for _, o := range offs {
		if o < -100_000 || o > 100_000 {
			far++
		}
	}
	sorted := append([]int64(nil), offs...)
	slices.Sort(sorted)
	if med := sorted[len(sorted)/2]; far > len(offs)/10 || med < -20_000 || med > 20_000 {
		t.Errorf("%d of %d offsets beyond 100 us, median %d ns: the truth is 0", far, len(offs), med)
	}
	if p.RxSources[2].Load() == 0 || p.RxSources[1].Load() != 0 || p.TxSources[2].Load() == 0 {
		t.Errorf("timestamps: rx %d software %d user, tx %d software", p.RxSources[2].Load(), p.RxSources[1].Load(), p.TxSources[2].Load())
	}
	if st.MasterChanges != 1 || st.Rejects[RejectForeign] == 0 {
		t.Errorf("master changes %d (want 1: the one master), foreign delay_resps refused %d (the ptp4l slave's)", st.MasterChanges, st.Rejects[RejectForeign])
	}
}

// needKernelTimestamps skips where the kernel gives no packet timestamps
// (qemu-user, which lacks PTP's raw-socket multicast options too).
func needKernelTimestamps(t *testing.T) {
	t.Helper()
	if c, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{}); err == nil {
		opt, why := c.Option()
		c.Close()
		if opt == "none" {
			t.Skipf("no kernel packet timestamps here (%v): the probe is measured with them", why)
		}
	}
}
