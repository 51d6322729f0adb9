package ptp

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

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

// batchSE is the standard error of v's mean by batch means: v cut into
// consecutive batches of size k (the last partial one left out), the std
// of the batch means over the square root of their number; 0 with fewer
// than two batches.
func batchSE(v []int64, k int) float64 {
	n := len(v) / k
	if n < 2 {
		return 0
	}
	means := make([]int64, n)
	for i := range means {
		var sum int64
		for _, x := range v[i*k : (i+1)*k] {
			sum += x
		}
		means[i] = sum / int64(k)
	}
	_, s := meanStd(means)
	return s / math.Sqrt(float64(n))
}

func TestBatchSE(t *testing.T) {
	// Batches of 2: means 1, 3, 5, 7 (the trailing 100 is left out); their
	// std is sqrt(20/3), over sqrt(4).
	got := batchSE([]int64{0, 2, 2, 4, 4, 6, 6, 8, 100}, 2)
	if want := math.Sqrt(20.0/3) / 2; math.Abs(got-want) > 1e-9 {
		t.Errorf("batchSE = %v, want %v", got, want)
	}
	if got := batchSE([]int64{1, 2, 3}, 2); got != 0 {
		t.Errorf("one batch: %v, want 0", got)
	}
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
// The two are compared Sync by Sync: the ptp4l slave's slave_event_monitor
// sends us the timestamps of every Sync and Delay_Req it uses, Offsets turns
// them into the offset ptp4l computes for each Sync (exactly, see
// TestSlaveEventMonitorMatchesPtp4lOffsets), and each is paired with the
// probe's Exchange of the same Sync by sequence id. Both take that Sync's
// t1 and t2, so a pair differs only by the two path delay estimates, whose
// difference is reported too. Only Syncs measured once both delay filters
// are full count, each slave's own: a cold filter (its first delays 2.5 us,
// settling to 1.9 us) against a full one, with log lines paired by time,
// made the std ratio 1.25 and 1.30 in runs of an earlier version.
//
// It checks that the probe measures (kernel timestamps, the master followed,
// the other slave's Delay_Resps refused) and holds it to the accuracy
// criterion against the ptp4l slave over the same Syncs.
func TestProbeAgainstPtp4l(t *testing.T) {
	needKernelTimestamps(t)
	// MONAGENT_PTP_NOWARMUP=1 measures the probe without its warm-up
	// datagram, on the same cold path as ptp4l's Delay_Reqs.
	noWarmUp := os.Getenv("MONAGENT_PTP_NOWARMUP") == "1"
	t.Logf("probe warm-up datagram before each Delay_Req: %v", !noWarmUp)
	for _, tc := range []struct {
		transport string
		listen    func(iface string) (*Probe, error)
	}{
		{"UDPv4", func(iface string) (*Probe, error) { return ListenUDP(UDPConfig{Interface: iface, NoWarmUp: noWarmUp}) }},
		{"L2", func(iface string) (*Probe, error) { return ListenL2(L2Config{Interface: iface, NoWarmUp: noWarmUp}) }},
	} {
		t.Run(tc.transport, func(t *testing.T) { probeAgainstPtp4l(t, tc.transport, noWarmUp, tc.listen) })
	}
}

// pairedSyncs is how many Syncs (1 Hz) both slaves must measure, once
// settled, for the comparison. 40 gave std ratios of 0.89-1.14 over 37
// runs and then 1.22 in a CI run, where a few of the probe's Delay_Reqs
// took ~16 µs from t3 to t4 against ~2 µs (its raw delays' std 1.3 µs,
// ptp4l's 0.2 µs; a cause not yet found) and held its median filter high
// for five Syncs: 80 halves the weight of such a spell.
const pairedSyncs = 80

// The bounds asserted on every run; the goals, 100 ns and 0.8, are
// logged and recorded in docs/performance.md. The probe warms its send path
// before each Delay_Req (Probe.warm), so its path delay is shorter than
// ptp4l's and its raw mean closer to the truth: the two raw means differ
// by that, 0.25-0.63 us here, the probe's the higher, and rawBound bounds
// how far below ptp4l's the probe's may be. Without the warm-up
// (MONAGENT_PTP_NOWARMUP=1) both take the same cold path: in 8 runs over
// UDPv4 they differed by -32 to -148 ns, 4.5-6 standard errors where
// measured (the probe's cold Delay_Reqs the slower), and over IEEE 802.3
// by -4 to +69 ns. The filtered std ratio was 0.23-0.90 over UDPv4 and
// 0.31-1.02 over IEEE 802.3: the 1.02 was a run whose path shifted level
// mid-run (the load fell, t2 - t1 fell from 2.4 to 1.1 us within 5 Syncs,
// both means moved ~0.8 us), which the 16-Sync line follows over 16 Syncs
// and overshoots while it does.
const (
	rawBound  = 300 // how far the probe's raw mean may be below ptp4l's (its Delay_Reqs the slower), ns
	filtRatio = 1.2 // filtered std / ptp4l's
)

// syncKey names one Sync: its master and sequence id.
type syncKey struct {
	master protocol.PortIdentity
	seq    uint16
}

// refSync is one Sync as the ptp4l slave used it: its monitor record and
// the offset and filtered path delay ptp4l computed for it.
type refSync struct {
	rec           SlaveTiming
	offset, delay int64
}

// rawDelay is one Delay_Req exchange's mean path delay, by its t3.
type rawDelay struct{ t3, ns int64 }

// rawDelays returns the delays of the exchanges sent from from to to.
func rawDelays(v []rawDelay, from, to int64) []int64 {
	var out []int64
	for _, d := range v {
		if d.t3 >= from && d.t3 <= to {
			out = append(out, d.ns)
		}
	}
	return out
}

// syncPair is one Sync both measured.
type syncPair struct {
	probe Exchange
	ref   refSync
}

func probeAgainstPtp4l(t *testing.T, transport string, noWarmUp bool, listen func(string) (*Probe, error)) {
	master, host := testbed.NewLink(t)
	events, err := ListenSlaveEvents(filepath.Join(t.TempDir(), "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true, Transport: transport})
	// Both filter their path delays alike, a moving median of the last
	// DefaultDelayFilterLength (ptp4l's default delay_filter_length, set
	// here to say so): each counts as settled once its filter is full.
	filter := DefaultDelayFilterLength
	slave := testbed.StartPtp4l(t, host, testbed.Ptp4lOptions{Transport: transport,
		Extra: fmt.Sprintf("slave_event_monitor %s\ndelay_filter_length %d\n", events.Path(), filter)})
	var p *Probe
	if err := host.Do(func() (err error) {
		p, err = listen(host.If)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Slave.DelayFilter = filter
	ctx, cancel := context.WithTimeout(context.Background(), 160*time.Second)
	defer cancel()
	var slow atomic.Uint64 // Syncs this test could not take: none expected
	// The probe's Exchanges, all of them: which are settled is told below.
	probeOut := make(chan Exchange, 128)
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		p.Run(ctx, func(ex *Exchange) {
			select {
			case probeOut <- *ex:
			default:
				slow.Add(1)
			}
		})
	}()
	// ptp4l's Syncs once its filter holds filter delays (counted from its
	// Delay_Req records; Offsets starts over on a new master, as ptp4l does,
	// and so does the count).
	refOut := make(chan refSync, 128)
	var refRaw []rawDelay // read once the monitor's reader is done
	eventsDone := make(chan error, 1)
	go func() {
		o := NewOffsets(filter)
		var following protocol.PortIdentity
		delays := 0
		eventsDone <- events.Run(ctx, func(recs []SlaveTiming, _ int64) {
			for i := range recs {
				r := &recs[i]
				if r.Master != following {
					following, delays = r.Master, 0
				}
				switch r.Kind {
				case SlaveDelay:
					if raw, _, ok := o.Delay(r); ok {
						delays++
						refRaw = append(refRaw, rawDelay{r.TxNS, raw})
					}
				case SlaveSync:
					off, d, ok := o.Sync(r)
					if !ok || delays < filter {
						continue
					}
					select {
					case refOut <- refSync{rec: *r, offset: off, delay: d}:
					default:
						slow.Add(1)
					}
				}
			}
		})
	}()
	stop := sync.OnceFunc(func() {
		cancel()
		<-probeDone
		if err := <-eventsDone; err != nil {
			t.Error(err)
		}
	})
	defer stop()

	// The probe's filter is full once filter delays have gone into it:
	// every Exchange carries the latest one (T3, T4), and at most one comes
	// between two Syncs (one Delay_Req per Sync), so counting the changes
	// never counts too many.
	var (
		probeDelays        int
		probeMaster        protocol.PortIdentity
		lastT3, lastT4     int64
		probeSyncs         = map[syncKey]Exchange{}
		refSyncs           = map[syncKey]refSync{}
		settledP, settledR int // settled Syncs seen from each
		pairs              []syncPair
		probeRaw           []rawDelay
	)
collect:
	for len(pairs) < pairedSyncs {
		select {
		case <-ctx.Done():
			break collect
		case ex := <-probeOut:
			if ex.Master != probeMaster {
				probeMaster, probeDelays, lastT3, lastT4 = ex.Master, 0, 0, 0
			}
			if ex.T3 != lastT3 || ex.T4 != lastT4 {
				probeDelays++
				lastT3, lastT4 = ex.T3, ex.T4
				probeRaw = append(probeRaw, rawDelay{ex.T3, ex.DelayNS})
			}
			if probeDelays < filter {
				continue
			}
			settledP++
			k := syncKey{ex.Master, ex.Seq}
			if r, ok := refSyncs[k]; ok {
				delete(refSyncs, k)
				pairs = append(pairs, syncPair{ex, r})
			} else {
				probeSyncs[k] = ex
			}
		case r := <-refOut:
			settledR++
			k := syncKey{r.rec.Master, r.rec.Seq}
			if ex, ok := probeSyncs[k]; ok {
				delete(probeSyncs, k)
				pairs = append(pairs, syncPair{ex, r})
			} else {
				refSyncs[k] = r
			}
		}
	}
	stop()
	if len(pairs) < pairedSyncs {
		t.Fatalf("%d Syncs measured by both once settled, want %d: probe %d settled Syncs (%d delays in its filter), ptp4l slave %d; %d not taken\n%s",
			len(pairs), pairedSyncs, settledP, probeDelays, settledR, slow.Load(), slave.LogText())
	}
	// Both take t1 from the same Follow_Up and t2 from the same frame (the
	// kernel stamps it once for every socket): their raw offsets of a Sync
	// differ only by their path delays, ptp4l's minus the probe's.
	offs := make([]int64, len(pairs))
	ref := make([]int64, len(pairs))
	diff := make([]int64, len(pairs))
	var filt, filtRef []int64 // the Syncs with a filtered offset, and ptp4l's of them
	same, syncOut, delayOut, formula := 0, 0, 0, 0
	for i, pr := range pairs {
		ex, r := pr.probe, pr.ref
		offs[i], ref[i], diff[i] = ex.OffsetNS, r.offset, ex.OffsetNS-r.offset
		if ex.T1+ex.CorrSyncNS == r.rec.TxNS+r.rec.CorrectionNS && ex.T2 == r.rec.RxNS {
			same++
		}
		// ptp4l's computation: offset + path delay is t2 - t1 - corrections
		// for both, whatever each one's path delay.
		if ex.OffsetNS+ex.PathDelayNS == r.offset+r.delay {
			formula++
		}
		if ex.Filtered {
			filt, filtRef = append(filt, ex.FilteredOffsetNS), append(filtRef, r.offset)
		}
		if ex.SyncOutlier {
			syncOut++
		}
		if ex.DelayOutlier {
			delayOut++
		}
		t.Logf("  sync %5d: offset probe %8d ns (filtered %8d, %v) ptp4l %8d ns (difference %5d), t2-t1 %8d ns, path delay probe %6d ns ptp4l %6d ns, outlier sync %v delay %v",
			ex.Seq, ex.OffsetNS, ex.FilteredOffsetNS, ex.Filtered, r.offset, diff[i], ex.T2-ex.T1, ex.PathDelayNS, r.delay, ex.SyncOutlier, ex.DelayOutlier)
	}
	// Each one's raw path delays (its Delay_Req exchanges) over the Syncs
	// compared: what its filter chose from.
	from, to := pairs[0].probe.T2, pairs[len(pairs)-1].probe.T2
	pr, rr := rawDelays(probeRaw, from, to), rawDelays(refRaw, from, to)
	prm, prs := meanStd(pr)
	rrm, rrs := meanStd(rr)
	st := p.Stats()
	m, s := meanStd(offs)
	rm, rs := meanStd(ref)
	dm, ds := meanStd(diff)
	fm, fs := meanStd(filt)
	frm, frs := meanStd(filtRef)
	t.Logf("%s multicast over a veth pair, 1 Hz sync, true offset 0, the same Syncs once both delay filters (%d) are full:", transport, filter)
	t.Logf("  %-30s %4s %10s %10s", "", "n", "mean", "std")
	t.Logf("  %-30s %4d %8.0f ns %8.0f ns", "monagent probe, raw", len(offs), m, s)
	t.Logf("  %-30s %4d %8.0f ns %8.0f ns", "ptp4l slave (free_running)", len(ref), rm, rs)
	t.Logf("  %-30s %4d %8.0f ns %8.0f ns", "probe raw - ptp4l, per Sync", len(diff), dm, ds)
	t.Logf("  %-30s %4d %8.0f ns %8.0f ns", "monagent probe, filtered", len(filt), fm, fs)
	t.Logf("  %-30s %4d %8.0f ns %8.0f ns", "ptp4l, the same Syncs", len(filtRef), frm, frs)
	t.Logf("  raw path delays meanwhile: probe %d, mean %.0f ns std %.0f ns; ptp4l slave %d, mean %.0f ns std %.0f ns", len(pr), prm, prs, len(rr), rrm, rrs)
	t.Logf("  same t1 and t2 in %d of %d pairs; settled Syncs seen: probe %d, ptp4l slave %d; not taken %d; flagged Syncs %d, Syncs after a flagged Delay_Req %d",
		same, len(pairs), settledP, settledR, slow.Load(), syncOut, delayOut)
	t.Logf("  rejects %v, dropped %d, master changes %d, bytes sent %d received %d, rx sources %d/%d/%d/%d tx %d/%d/%d/%d", st.Rejects, p.Dropped.Load(), st.MasterChanges, p.BytesSent.Load(), p.BytesReceived.Load(),
		p.RxSources[0].Load(), p.RxSources[1].Load(), p.RxSources[2].Load(), p.RxSources[3].Load(), p.TxSources[0].Load(), p.TxSources[1].Load(), p.TxSources[2].Load(), p.TxSources[3].Load())
	// The goals: the raw offset's mean within 100 ns of ptp4l's over
	// the same Syncs (they differ only by the two delay filters, each fed
	// by Delay_Reqs of its own: with NoWarmUp), and the filtered offset's
	// std at most 0.8x ptp4l's per-Sync offsets. The bounds asserted are
	// those that hold on this shared 2-core VM under the other packages'
	// tests (see docs/performance.md for the runs): ptp4l's computation per
	// Sync, the probe's raw mean not below ptp4l's by more than rawBound,
	// the filtered std at most filtRatio x ptp4l's; the goals are logged.
	// How finely this run resolves the raw means' difference: its standard
	// error by batch means, each batch a delay filter's length of Syncs
	// (within one, both medians draw on the same Delay_Reqs, so the Syncs
	// are not independent). Where 2 se > 100 ns, 80 Syncs cannot tell the
	// 100 ns goal from the two filters' independent noise.
	se := batchSE(diff, filter)
	t.Logf("  raw mean - ptp4l's %.0f ns, standard error %.0f ns by batches of %d Syncs (within 100 ns: %v; resolvable at 2 se: %v); against the truth: probe %.0f ns, ptp4l %.0f ns (probe the closer: %v; its Delay_Reqs no slower, to max(%d ns, 3 se): %v); ptp4l's computation in %d of %d Syncs; filtered std ratio %.2f (goal 0.8: %v; bound %.2f); warm-up %v",
		m-rm, se, filter, math.Abs(m-rm) <= 100, 2*se <= 100, m, rm, math.Abs(m) <= math.Abs(rm), rawBound, rm-m <= max(rawBound, 3*se), formula, len(pairs), fs/frs, fs <= 0.8*frs, filtRatio, !noWarmUp)
	if same != len(pairs) {
		t.Errorf("%d of %d pairs differ in t1 or t2: not the same Syncs", len(pairs)-same, len(pairs))
	}
	if formula != len(pairs) {
		t.Errorf("offset + path delay differs from ptp4l's in %d of %d Syncs: not ptp4l's computation", len(pairs)-formula, len(pairs))
	}
	// No bias of the probe's own: its raw offset is ptp4l's computation
	// (checked above), so the two raw means differ by the two path delays
	// alone, ptp4l's minus the probe's. The probe's Delay_Reqs must not be
	// the slower: its raw mean not below ptp4l's by more than rawBound or 3
	// standard errors, where a loaded run resolves no finer. Its warm-up
	// makes its Delay_Req leg the shorter, and its mean the higher, by
	// design. Closer to the truth than ptp4l's it was in every quiet run
	// (docs/performance.md), but that is logged, not asserted: under load
	// the Sync's leg (the master's send path) can grow as long as a cold
	// Delay_Req's, and then a shorter request leg moves the offset past
	// the truth, however well the probe measured its own leg.
	if rm-m > max(rawBound, 3*se) {
		t.Errorf("probe raw mean %.0f ns is %.0f ns below the ptp4l slave's over the same Syncs: its Delay_Reqs the slower, a bias of the probe's own (bound max(%d ns, 3 x %.0f ns))", m, rm-m, rawBound, se)
	}
	if 2*len(filt) < len(pairs) {
		t.Errorf("a filtered offset on %d of %d Syncs: its filter does not settle", len(filt), len(pairs))
	} else if fs > filtRatio*frs {
		t.Errorf("filtered std %.0f ns > %.2f x ptp4l's %.0f ns over the same Syncs", fs, filtRatio, frs)
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
