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
// for a noisy path: the same bytes per second, half as many, better samples). The chronyd client sends from a second address on that link:
// chronyd's server keeps interleaved-mode state per client address, and two
// clients on one address would spoil each other's. Both namespaces share one
// clock: the true offset is 0.
// The probe's mean must be within 5 us of it and its standard deviation no
// larger than chronyd's own measurement of the same server. Both sides are
// taken as they are used: the samples that passed the delay test (the probe's
// DelayTest, chronyd's maxdelaydevratio and its other tests); a scheduling
// stall on this 2-core machine running the other packages' tests makes a
// sample whose delay is ten times the usual, and either side flags it.
func TestProbeAgainstChronydOverVeth(t *testing.T) {
	if testing.Short() {
		t.Skip("65 s measurement; skipped with -short")
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
	const polls, interval = 30, 2 * time.Second
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
	sources := map[string]int{}
	for i := 0; i < polls; i++ {
		res, err := p.Poll(ctx)
		if err != nil {
			t.Fatalf("poll %d: %v", i, err)
		}
		s := res.Samples[res.Best]
		t.Logf("  sample %2d: offset %6d ns delay %6d ns interleaved %v outlier %v", i, s.OffsetNS, s.DelayNS, s.Interleaved, s.DelayOutlier)
		all = append(all, s.OffsetNS)
		sources[s.TxSource.String()+"/"+s.RxSource.String()]++
		if !s.DelayOutlier {
			offsets = append(offsets, s.OffsetNS)
			delays = append(delays, s.DelayNS)
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * interval)))
	}
	end := time.Now()
	ms, err := client.Measurements()
	if err != nil {
		t.Fatal(err)
	}
	var chronyOff, chronyAll []int64
	for _, m := range ms {
		if !m.Time.Before(start.UTC().Truncate(time.Second)) && !m.Time.After(end.UTC()) {
			chronyAll = append(chronyAll, m.OffsetNS)
			if m.Passed() {
				chronyOff = append(chronyOff, m.OffsetNS)
			}
		}
	}
	if len(chronyOff) < polls {
		t.Fatalf("chronyd logged %d measurements in the window", len(chronyOff))
	}
	mean, std := meanStd(offsets)
	cmean, cstd := meanStd(chronyOff)
	dmean, _ := meanStd(delays)
	amean, astd := meanStd(all)
	camean, castd := meanStd(chronyAll)
	probeBps := float64(p.C.BytesSent.Load()+p.C.BytesReceived.Load()-sent0) / end.Sub(start).Seconds()
	t.Logf("over veth, true offset 0; probe %.0f B/s (burst 2 every 2 s), chronyd %.0f B/s (1 s poll):", probeBps, float64(2*(48+overheadV4)))
	t.Logf("  %-22s %4s %12s %12s   %4s %12s %12s", "", "kept", "mean", "std", "all", "mean", "std")
	t.Logf("  %-22s %4d %12s %12s   %4d %12s %12s", "monagent probe", len(offsets), fmtNS(mean), fmtNS(std), len(all), fmtNS(amean), fmtNS(astd))
	t.Logf("  %-22s %4d %12s %12s   %4d %12s %12s", "chronyd (client, -x)", len(chronyOff), fmtNS(cmean), fmtNS(cstd), len(chronyAll), fmtNS(camean), fmtNS(castd))
	if len(offsets) < polls*3/4 {
		t.Errorf("the delay test set aside %d of %d samples", len(all)-len(offsets), len(all))
	}
	t.Logf("  probe delay mean %s; timestamps (tx/rx) %v; %d of %d exchanges interleaved; bytes sent %d received %d",
		fmtNS(dmean), sources, p.C.Interleaved.Load()-warm, 2*polls, p.C.BytesSent.Load(), p.C.BytesReceived.Load())
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

func fmtNS(v float64) string { return fmt.Sprintf("%.0f ns", v) }
