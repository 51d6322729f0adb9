package ntp

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

func meanStd(v []int64) (mean, std float64) {
	for _, x := range v {
		mean += float64(x)
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (float64(x) - mean) * (float64(x) - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)-1))
}

// TestProbeAgainstChronydOverVeth: chronyd serves NTP in one namespace; in the
// other, across a veth pair, our probe and a chronyd client (-x) measure it with
// the same traffic: chronyd one request a second (poll 0), the probe a burst of
// two every 2 s, keeping the one with the smaller delay (its product setting
// for a noisy path: the same bytes per second, half as many, better samples).
// The chronyd client sends from a second address on that link: chronyd's
// server keeps interleaved-mode state per client address, and two clients on
// one address would spoil each other's. Both namespaces share one clock: the
// true offset is 0.
//
// The peer is chronyd at its best with software timestamps: interleaved
// (xleave), kernel RX and TX stamps, and noselect (testbed.ChronydMeasurerConf:
// its offsets are then of the system clock, not of the virtual clock a
// chronyd -x steers, whose offsets average zero by its own servo). Every
// measurement of its compared must say so in measurements.log ("4I", "K K"):
// a basic-mode comparison fails.
//
// Both are taken as they are used: the samples that passed the delay test
// (the probe's DelayTest, chronyd's maxdelaydevratio and its other tests); a
// scheduling stall on this 2-core machine running the other packages' tests
// makes a sample whose delay is ten times the usual, and either side flags
// it. The probe polls until it has kept wantKept samples and chronyd has
// logged wantKept passed measurements since the first poll (about 80 s
// idle), at most maxPolls times, and the delay test must keep 3/4 of the
// polls made.
//
// Asserted: no bias of the probe's own, its mean no further from the truth
// than chronyd's over the same window (to 200 ns, or 3 standard errors of
// the difference where a loaded run resolves no finer): the path itself is
// asymmetric, a request sent after a second's sleep taking the longer (see
// docs/performance.md), and chronyd takes all of that; and the probe's std
// no noisier than chronyd's (stdLimit). The goals (means within
// 200 ns, std at most 0.5x) are logged and recorded in docs/performance.md.

// stdLimit is the largest probe std that is still "no noisier than
// chronyd": chronyd's std times the sampling spread of the ratio of two
// sample stds at 1 in 1,000. With n1 and n2 samples, ln(s1/s2) is close to
// normal with variance 1/(2(n1-1)) + 1/(2(n2-1)); at the 40 and 79 samples of
// a run that allows a ratio of 1.53, where a fixed 1.2 failed CI's fresh
// machine at an observed 1.25 (242 ns against 193 ns). A probe without its
// kernel timestamps or its delay test is several times chronyd's and fails.
func stdLimit(cstd float64, n1, n2 int) float64 {
	const z = 3.09 // one-sided 0.999
	return cstd * math.Exp(z*math.Sqrt(0.5/float64(n1-1)+0.5/float64(n2-1)))
}

func TestProbeAgainstChronydOverVeth(t *testing.T) {
	if testing.Short() {
		t.Skip("1 to 3 min measurement; skipped with -short")
	}
	srv, cli := testbed.NewLink(t)
	second := netip.MustParseAddr("10.233.0.3")
	cli.AddAddr(t, second)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	client := testbed.StartChronyd(t, cli, testbed.ChronydMeasurerConf(srv.Addr.String(), 0, second.String()))
	var conn *sockts.Conn
	if err := cli.Do(func() (err error) {
		conn, err = sockts.ListenUDP(netip.AddrPortFrom(cli.Addr, 0), sockts.Options{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if opt, why := conn.Option(); opt == "none" {
		t.Skipf("no kernel packet timestamps here (%v): the comparison needs them", why)
	}
	const (
		wantKept = 40           // kept samples each side needs
		maxPolls = 3 * wantKept // the bound on the wait for them
		interval = 2 * time.Second
	)
	p := NewProber(ProbeConfig{Server: netip.AddrPortFrom(srv.Addr, 123), Burst: 2, BurstSpacing: 250 * time.Millisecond}, conn)
	ctx := context.Background()
	// Warm-up, as chronyd's iburst: the server can answer in interleaved mode
	// from the third request on.
	for i := 0; i < 3; i++ {
		if _, err := p.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
	}
	warm := p.C.Interleaved.Load()
	sent0 := p.C.BytesSent.Load() + p.C.BytesReceived.Load()
	start := time.Now()
	var offsets, delays, all []int64
	var cw chronydSamples
	sources := map[string]int{}
	var end time.Time
	polls := 0
	for ; polls < maxPolls && (len(offsets) < wantKept || len(cw.passed) < wantKept); polls++ {
		res, err := p.Poll(ctx)
		if err != nil {
			t.Fatalf("poll %d: %v", polls, err)
		}
		s := res.Samples[res.Best]
		t.Logf("  sample %2d: offset %6d ns delay %6d ns (request leg T2-T1 %6d, reply leg T4-T3 %6d) interleaved %v outlier %v",
			polls, s.OffsetNS, s.DelayNS, s.T2-s.T1, s.T4-s.T3, s.Interleaved, s.DelayOutlier)
		all = append(all, s.OffsetNS)
		sources[s.TxSource.String()+"/"+s.RxSource.String()]++
		if !s.DelayOutlier {
			offsets = append(offsets, s.OffsetNS)
			delays = append(delays, s.DelayNS)
		}
		time.Sleep(time.Until(start.Add(time.Duration(polls+1) * interval)))
		// chronyd's side of the same window so far: a few hundred lines of
		// its log, read in about 0.2 ms (1 ms at worst here) of a 2 s poll.
		end = time.Now()
		if cw, err = chronydWindow(client, start, end); err != nil {
			t.Fatal(err)
		}
	}
	mean, std := meanStd(offsets)
	cmean, cstd := meanStd(cw.passed)
	dmean, _ := meanStd(delays)
	cdmean, _ := meanStd(cw.delays)
	amean, astd := meanStd(all)
	camean, castd := meanStd(cw.all)
	probeBps := float64(p.C.BytesSent.Load()+p.C.BytesReceived.Load()-sent0) / end.Sub(start).Seconds()
	t.Logf("over veth, true offset 0, %d polls in %.0f s; probe %.0f B/s (burst 2 every 2 s), chronyd %.0f B/s (1 s poll, xleave, noselect):",
		polls, end.Sub(start).Seconds(), probeBps, float64(2*(48+overheadV4)))
	t.Logf("  %-30s %4s %12s %12s   %4s %12s %12s", "", "kept", "mean", "std", "all", "mean", "std")
	t.Logf("  %-30s %4d %12s %12s   %4d %12s %12s", "monagent probe", len(offsets), fmtNS(mean), fmtNS(std), len(all), fmtNS(amean), fmtNS(astd))
	t.Logf("  %-30s %4d %12s %12s   %4d %12s %12s", "chronyd (interleaved client, -x)", len(cw.passed), fmtNS(cmean), fmtNS(cstd), len(cw.all), fmtNS(camean), fmtNS(castd))
	t.Logf("  delay mean: probe %s, chronyd %s; chronyd modes %v; probe timestamps (tx/rx) %v; %d of %d exchanges interleaved; bytes sent %d received %d",
		fmtNS(dmean), fmtNS(cdmean), cw.modes, sources, p.C.Interleaved.Load()-warm, 2*polls, p.C.BytesSent.Load(), p.C.BytesReceived.Load())
	if len(offsets) < wantKept || len(cw.passed) < wantKept {
		t.Fatalf("after %d polls (%.0f s): the probe kept %d samples and chronyd passed %d measurements in the window; want %d each",
			polls, end.Sub(start).Seconds(), len(offsets), len(cw.passed), wantKept)
	}
	// The peer must have been at its best on every line compared.
	if n := cw.modes["4I K K"]; n != len(cw.all) {
		t.Errorf("chronyd measured in interleaved mode with kernel stamps on %d of %d lines (%v): not the peer at its best", n, len(cw.all), cw.modes)
	}
	if 4*len(offsets) < 3*polls {
		t.Errorf("the delay test set aside %d of %d samples", polls-len(offsets), polls)
	}
	// No bias of the probe's own: against the truth (0) it is no further
	// off than chronyd on the same path, to 200 ns or 3 standard errors of
	// the difference where a loaded run resolves no finer. (Without its
	// warm-up datagram the probe's mean is chronyd's to ~100 ns, both taking
	// the path's asymmetry; with it, the probe is the closer to the truth:
	// docs/performance.md.)
	se := math.Sqrt(std*std/float64(len(offsets)) + cstd*cstd/float64(len(cw.passed)))
	slack := max(200, 3*se)
	t.Logf("  probe - chronyd: mean %s; |mean| probe %s chronyd %s (bound: chronyd's + %s); probe within 200 ns of chronyd %v, of the truth %v; std ratio %.2f (goal 0.5: %v; bound %.2f)",
		fmtNS(mean-cmean), fmtNS(math.Abs(mean)), fmtNS(math.Abs(cmean)), fmtNS(slack), math.Abs(mean-cmean) <= 200, math.Abs(mean) <= 200, std/cstd, std <= 0.5*cstd, stdLimit(cstd, len(offsets), len(cw.passed))/cstd)
	if math.Abs(mean) > math.Abs(cmean)+slack {
		t.Errorf("probe mean %s is further from the truth than chronyd's %s by more than %s over the same path: a bias of the probe's own", fmtNS(mean), fmtNS(cmean), fmtNS(slack))
	}
	if math.Abs(mean) > 5000 {
		t.Errorf("|mean offset| %s > 5 us", fmtNS(math.Abs(mean)))
	}
	if lim := stdLimit(cstd, len(offsets), len(cw.passed)); std > lim {
		t.Errorf("probe std %s > %s: noisier than chronyd's %s beyond the sampling spread of %d and %d samples", fmtNS(std), fmtNS(lim), fmtNS(cstd), len(offsets), len(cw.passed))
	}
	if sources["software/software"] < len(all)-1 {
		t.Errorf("kernel software timestamps on only %d of %d samples: %v", sources["software/software"], len(all), sources)
	}
}

// chronydSamples is what chronyd's client logged over a window.
type chronydSamples struct {
	passed, delays []int64 // offsets (local - server) and delays that passed all its tests
	all            []int64 // every offset
	modes          map[string]int
}

// chronydWindow returns what chronyd's client logged from start to end (its
// log has whole seconds, so start is taken down to one), with the count of
// each mode and timestamp-source column ("4I K K").
func chronydWindow(c *testbed.Chronyd, start, end time.Time) (chronydSamples, error) {
	ms, err := c.Measurements()
	if err != nil {
		return chronydSamples{}, fmt.Errorf("chronyd measurements: %w", err)
	}
	w := chronydSamples{modes: map[string]int{}}
	from, to := start.UTC().Truncate(time.Second), end.UTC()
	for _, m := range ms {
		if m.Time.Before(from) || m.Time.After(to) {
			continue
		}
		w.modes[m.Mode+" "+m.TxStamp+" "+m.RxStamp]++
		w.all = append(w.all, m.OffsetNS)
		if m.Passed() {
			w.passed = append(w.passed, m.OffsetNS)
			w.delays = append(w.delays, m.DelayNS)
		}
	}
	return w, nil
}

func fmtNS(v float64) string { return fmt.Sprintf("%.0f ns", v) }
