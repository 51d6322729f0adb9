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
// The probe's mean must be within 5 us of it and its standard deviation no
// larger than chronyd's own measurement of the same server. Both sides are
// taken as they are used: the samples that passed the delay test (the probe's
// DelayTest, chronyd's maxdelaydevratio and its other tests); a scheduling
// stall on this 2-core machine running the other packages' tests makes a
// sample whose delay is ten times the usual, and either side flags it.
// The comparison needs enough samples on both sides over one window, and a
// loaded machine fails more of chronyd's tests: the probe polls until it has
// kept wantKept samples and chronyd has logged wantKept passed measurements
// since the first poll (about 60 s idle), at most maxPolls times (3 min), and
// the delay test must keep 3/4 of the polls made.
func TestProbeAgainstChronydOverVeth(t *testing.T) {
	if testing.Short() {
		t.Skip("1 to 3 min measurement; skipped with -short")
	}
	srv, cli := testbed.NewLink(t)
	second := netip.MustParseAddr("10.233.0.3")
	cli.AddAddr(t, second)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	client := testbed.StartChronyd(t, cli, testbed.ChronydClientConf(srv.Addr.String(), 0, second.String()))
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
		wantKept = 30           // kept samples each side needs
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
	var offsets, delays, all, chronyOff, chronyAll []int64
	sources := map[string]int{}
	var end time.Time
	polls := 0
	for ; polls < maxPolls && (len(offsets) < wantKept || len(chronyOff) < wantKept); polls++ {
		res, err := p.Poll(ctx)
		if err != nil {
			t.Fatalf("poll %d: %v", polls, err)
		}
		s := res.Samples[res.Best]
		t.Logf("  sample %2d: offset %6d ns delay %6d ns interleaved %v outlier %v", polls, s.OffsetNS, s.DelayNS, s.Interleaved, s.DelayOutlier)
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
		if chronyOff, chronyAll, err = chronydWindow(client, start, end); err != nil {
			t.Fatal(err)
		}
	}
	mean, std := meanStd(offsets)
	cmean, cstd := meanStd(chronyOff)
	dmean, _ := meanStd(delays)
	amean, astd := meanStd(all)
	camean, castd := meanStd(chronyAll)
	probeBps := float64(p.C.BytesSent.Load()+p.C.BytesReceived.Load()-sent0) / end.Sub(start).Seconds()
	t.Logf("over veth, true offset 0, %d polls in %.0f s; probe %.0f B/s (burst 2 every 2 s), chronyd %.0f B/s (1 s poll):",
		polls, end.Sub(start).Seconds(), probeBps, float64(2*(48+overheadV4)))
	t.Logf("  %-22s %4s %12s %12s   %4s %12s %12s", "", "kept", "mean", "std", "all", "mean", "std")
	t.Logf("  %-22s %4d %12s %12s   %4d %12s %12s", "monagent probe", len(offsets), fmtNS(mean), fmtNS(std), len(all), fmtNS(amean), fmtNS(astd))
	t.Logf("  %-22s %4d %12s %12s   %4d %12s %12s", "chronyd (client, -x)", len(chronyOff), fmtNS(cmean), fmtNS(cstd), len(chronyAll), fmtNS(camean), fmtNS(castd))
	t.Logf("  probe delay mean %s; timestamps (tx/rx) %v; %d of %d exchanges interleaved; bytes sent %d received %d",
		fmtNS(dmean), sources, p.C.Interleaved.Load()-warm, 2*polls, p.C.BytesSent.Load(), p.C.BytesReceived.Load())
	if len(offsets) < wantKept || len(chronyOff) < wantKept {
		t.Fatalf("after %d polls (%.0f s): the probe kept %d samples and chronyd passed %d measurements in the window; want %d each",
			polls, end.Sub(start).Seconds(), len(offsets), len(chronyOff), wantKept)
	}
	if 4*len(offsets) < 3*polls {
		t.Errorf("the delay test set aside %d of %d samples", polls-len(offsets), polls)
	}
	if math.Abs(mean) > 5000 {
		t.Errorf("|mean offset| %s > 5 us", fmtNS(math.Abs(mean)))
	}
	if std > cstd {
		t.Errorf("probe std %s > chronyd's %s", fmtNS(std), fmtNS(cstd))
	}
	if sources["software/software"] < len(all)-1 {
		t.Errorf("kernel software timestamps on only %d of %d samples: %v", sources["software/software"], len(all), sources)
	}
}

// chronydWindow returns the offsets chronyd's client logged from start to end
// (its log has whole seconds, so start is taken down to one): the measurements
// that passed all its tests, and every one.
func chronydWindow(c *testbed.Chronyd, start, end time.Time) (passed, all []int64, err error) {
	ms, err := c.Measurements()
	if err != nil {
		return nil, nil, fmt.Errorf("chronyd measurements: %w", err)
	}
	from, to := start.UTC().Truncate(time.Second), end.UTC()
	for _, m := range ms {
		if m.Time.Before(from) || m.Time.After(to) {
			continue
		}
		all = append(all, m.OffsetNS)
		if m.Passed() {
			passed = append(passed, m.OffsetNS)
		}
	}
	return passed, all, nil
}

func fmtNS(v float64) string { return fmt.Sprintf("%.0f ns", v) }
