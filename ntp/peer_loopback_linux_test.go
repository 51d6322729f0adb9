package ntp

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/facebook/time/ntp/protocol"

	"github.com/monagent/monagent/sockts"
)

// loopbackServer is a minimal honest NTPv4 server (RFC 5905) on a loopback
// socket with kernel timestamps: stratum 1, the receive timestamp the kernel's
// receive stamp of the request, the transmit timestamp the time just before
// the reply is sent, the request's transmit timestamp echoed as the origin.
// It answers in basic mode only (a request asking for interleaved mode gets a
// basic reply, as from any server but chronyd). It runs on one goroutine until
// its context is done.
type loopbackServer struct {
	c                  *sockts.Conn
	addr               netip.AddrPort
	requests, answered int
	rxSources          map[sockts.Source]int
}

// serve answers requests until ctx is done.
func (s *loopbackServer) serve(ctx context.Context, t *testing.T) {
	buf := make([]byte, 1024)
	var req protocol.Packet
	for ctx.Err() == nil {
		n, from, rx, err := s.c.ReadFrom(buf, 50*time.Millisecond)
		if err != nil {
			continue // a timeout: look at ctx again
		}
		if req.UnmarshalBinary(buf[:n]) != nil || req.Settings&7 != 3 {
			continue // not a client request
		}
		s.requests++
		s.rxSources[rx.Source]++
		rxSec, rxFrac := FromUnixNS(rx.NS)
		now := time.Now()
		refSec, refFrac := FromUnixNS(now.Add(-time.Second).UnixNano())
		reply := protocol.Packet{
			// leap 0, the client's version, mode 4 (server)
			Settings:       req.Settings&(7<<3) | 4,
			Stratum:        1,
			Poll:           req.Poll,
			Precision:      -20,            // ~1 us
			RootDispersion: 1 << 16 / 1000, // 1 ms, NTP short format
			ReferenceID:    0x4c4f434c,     // "LOCL"
			RefTimeSec:     refSec, RefTimeFrac: refFrac,
			OrigTimeSec: req.TxTimeSec, OrigTimeFrac: req.TxTimeFrac,
			RxTimeSec: rxSec, RxTimeFrac: rxFrac,
		}
		reply.TxTimeSec, reply.TxTimeFrac = FromUnixNS(time.Now().UnixNano())
		b, err := reply.Bytes()
		if err != nil {
			t.Errorf("loopback server: %v", err)
			return
		}
		if _, err := s.c.WriteTo(b, from); err != nil {
			t.Errorf("loopback server: reply to %v: %v", from, err)
			continue
		}
		s.answered++
	}
}

// warmUp waits (up to 10 s: it was 1 s, and the kernel's deferred work runs
// late on a loaded machine) until a datagram to to is stamped by the
// kernel: receive timestamping is switched on through a deferred static key
// when the first timestamping socket appears, so the first packets may go
// without one.
func warmUp(t *testing.T, to *sockts.Conn) {
	t.Helper()
	from, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	dst, err := to.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if _, err := from.WriteTo([]byte("warm"), dst); err != nil {
			t.Fatal(err)
		}
		if _, _, rx, err := to.ReadFrom(buf, 100*time.Millisecond); err == nil && rx.Source == sockts.SourceSoftware {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no kernel receive timestamp on loopback within 10 s")
}

// TestProbeAgainstLoopbackServer runs the probe with kernel software
// timestamps against an NTP server of this test on 127.0.0.1 (no chronyd, no
// namespaces: it runs in the QEMU guest as in CI). Both ends share one clock,
// so the true offset is 0. One burst of 8 requests in the probe's default
// (interleaved) mode; the server answers in basic mode, which the probe then
// uses. Every request must make a sample, both stamps of each from the kernel
// (software), the offset within 5 ms, the delay positive and under 50 ms, and
// T1 <= T2 <= T3 <= T4 (one clock); T4, the sample's time (the agent's record
// time), is the kernel's receive stamp of the reply: after the request's
// send, before Poll returned, distinct from sample to sample.
func TestProbeAgainstLoopbackServer(t *testing.T) {
	conn, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if opt, why := conn.Option(); opt == "none" {
		t.Skipf("no kernel packet timestamps here (%v): the test measures with them", why)
	}
	sc, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() }) // after the server's goroutine ended (cleanups run last first)
	warmUp(t, sc)
	srv := &loopbackServer{c: sc, rxSources: map[sockts.Source]int{}}
	if srv.addr, err = sc.LocalAddr(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); srv.serve(ctx, t) }()
	t.Cleanup(func() { cancel(); wg.Wait() })

	const n = 8
	p := NewProber(ProbeConfig{Server: srv.addr, Burst: n, BurstSpacing: 20 * time.Millisecond, Timeout: time.Second}, conn)
	before := time.Now().UnixNano()
	res, err := p.Poll(ctx)
	after := time.Now().UnixNano()
	if err != nil {
		t.Fatalf("poll: %v (errors %v)", err, res.Errors)
	}
	cancel()
	wg.Wait() // the server's counters are ours from here

	for i, s := range res.Samples {
		t.Logf("  sample %d: offset %6d ns delay %6d ns, T3-T2 %5d ns, sources %v/%v, interleaved %v outlier %v",
			i, s.OffsetNS, s.DelayNS, s.T3-s.T2, s.TxSource, s.RxSource, s.Interleaved, s.DelayOutlier)
	}
	t.Logf("requests %d replies %d timeouts %d rejects %v interleaved %d; server: %d requests, %d answered, rx stamps %v",
		p.C.Requests.Load(), p.C.Replies.Load(), p.C.Timeouts.Load(), rejects(&p.C), p.C.Interleaved.Load(),
		srv.requests, srv.answered, srv.rxSources)

	if len(res.Samples) != n || len(res.Errors) != 0 {
		t.Fatalf("%d samples of %d requests, errors %v", len(res.Samples), n, res.Errors)
	}
	if p.C.Requests.Load() != n || p.C.Replies.Load() != n || p.C.Timeouts.Load() != 0 || p.C.Interleaved.Load() != 0 {
		t.Errorf("requests %d replies %d timeouts %d interleaved %d: want %d, %d, 0, 0",
			p.C.Requests.Load(), p.C.Replies.Load(), p.C.Timeouts.Load(), p.C.Interleaved.Load(), n, n)
	}
	if r := rejects(&p.C); len(r) != 0 {
		t.Errorf("replies rejected: %v", r)
	}
	if srv.rxSources[sockts.SourceSoftware] != n {
		t.Errorf("server receive stamps %v: want %d kernel software ones", srv.rxSources, n)
	}
	if res.Best < 0 || res.Best >= n {
		t.Errorf("best %d", res.Best)
	}
	const maxOffset, maxDelay = int64(5 * time.Millisecond), int64(50 * time.Millisecond)
	prevT4 := before
	for i, s := range res.Samples {
		if s.TxSource != sockts.SourceSoftware || s.RxSource != sockts.SourceSoftware || s.Mixed {
			t.Errorf("sample %d: stamps %v/%v (mixed %v), want kernel software both", i, s.TxSource, s.RxSource, s.Mixed)
		}
		if s.Interleaved {
			t.Errorf("sample %d: interleaved from a basic-mode server", i)
		}
		if s.OffsetNS <= -maxOffset || s.OffsetNS >= maxOffset {
			t.Errorf("sample %d: offset %d ns: |offset| >= 5 ms on one clock", i, s.OffsetNS)
		}
		if s.DelayNS <= 0 || s.DelayNS >= maxDelay {
			t.Errorf("sample %d: delay %d ns, want 0 < delay < 50 ms", i, s.DelayNS)
		}
		if !(s.T1 <= s.T2 && s.T2 <= s.T3 && s.T3 <= s.T4) {
			t.Errorf("sample %d: T1 %d T2 %d T3 %d T4 %d out of order on one clock", i, s.T1, s.T2, s.T3, s.T4)
		}
		if s.T4 <= prevT4 || s.T4 > after {
			t.Errorf("sample %d: T4 %d not after the previous %d and before Poll returned (%d)", i, s.T4, prevT4, after)
		}
		prevT4 = s.T4
		h := s.Header
		if h.Stratum != 1 || h.Version != 4 || h.Leap != 0 || h.RefIDString() != "LOCL" || h.Precision != -20 {
			t.Errorf("sample %d: header %+v", i, h)
		}
	}
}

// rejects returns the nonzero reject counters by reason.
func rejects(c *Counters) map[string]uint64 {
	m := map[string]uint64{}
	for r := range c.Rejects {
		if v := c.Rejects[r].Load(); v != 0 {
			m[Reject(r).String()] = v
		}
	}
	return m
}
