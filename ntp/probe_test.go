package ntp

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/monagent/monagent/sockts"
)

var server = netip.MustParseAddrPort("10.0.0.1:123")

// fakeServer answers each request with a reply built by respond, after an
// optional stale or foreign datagram.
type fakeServer struct {
	now       int64
	delays    []int64 // one-way delay per request, ns
	i         int
	stale     bool   // send a reply with a wrong origin first
	kiss      string // answer with this kiss code
	silent    bool
	pending   [][]byte
	pendingTs []int64
	from      netip.AddrPort
	sent      func(n int) // if set, called with the count of requests after each
}

func (f *fakeServer) WriteTo(b []byte, to netip.AddrPort) (sockts.Timestamp, error) {
	f.now += 1_000_000
	t1 := f.now
	d := int64(10_000)
	if f.i < len(f.delays) {
		d = f.delays[f.i]
	}
	f.i++
	if f.sent != nil {
		f.sent(f.i)
	}
	if f.silent {
		return sockts.Timestamp{NS: t1, Source: sockts.SourceSoftware}, nil
	}
	cookie := binary.BigEndian.Uint64(b[40:48])
	reply := make([]byte, 48)
	reply[0] = 0x24
	reply[1] = 2
	binary.BigEndian.PutUint32(reply[12:], 0x0a000002)
	binary.BigEndian.PutUint64(reply[24:], cookie)
	s2, f2 := FromUnixNS(t1 + d)
	s3, f3 := FromUnixNS(t1 + d + 5000)
	binary.BigEndian.PutUint32(reply[32:], s2)
	binary.BigEndian.PutUint32(reply[36:], f2)
	binary.BigEndian.PutUint32(reply[40:], s3)
	binary.BigEndian.PutUint32(reply[44:], f3)
	if f.kiss != "" {
		reply[1] = 0
		copy(reply[12:16], f.kiss)
	}
	if f.stale {
		old := append([]byte(nil), reply...)
		old[31] ^= 0xff
		f.pending = append(f.pending, old)
		f.pendingTs = append(f.pendingTs, t1+d+2000)
	}
	f.pending = append(f.pending, reply)
	f.pendingTs = append(f.pendingTs, t1+2*d+5000)
	return sockts.Timestamp{NS: t1, Source: sockts.SourceSoftware}, nil
}

func (f *fakeServer) ReadFrom(b []byte, timeout time.Duration) (int, netip.AddrPort, sockts.Timestamp, error) {
	if len(f.pending) == 0 {
		return 0, netip.AddrPort{}, sockts.Timestamp{}, sockts.ErrTimeout
	}
	n := copy(b, f.pending[0])
	ts := f.pendingTs[0]
	f.pending, f.pendingTs = f.pending[1:], f.pendingTs[1:]
	from := f.from
	if !from.IsValid() {
		from = server
	}
	return n, from, sockts.Timestamp{NS: ts, Source: sockts.SourceSoftware}, nil
}

func TestBurstKeepsMinimumDelay(t *testing.T) {
	f := &fakeServer{now: 1_795_000_000_000_000_000, delays: []int64{40_000, 12_000, 30_000, 90_000}}
	p := NewProber(ProbeConfig{Server: server, Burst: 4, BurstSpacing: time.Millisecond}, f)
	res, err := p.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Samples) != 4 || res.Best != 1 {
		t.Fatalf("samples %d best %d", len(res.Samples), res.Best)
	}
	best := res.Samples[1]
	if best.DelayNS != 24_000 || best.OffsetNS != 0 {
		t.Fatalf("best sample delay %d offset %d; symmetric 12 us each way gives 24000 and 0", best.DelayNS, best.OffsetNS)
	}
	// Bytes: 4 requests and 4 replies of 90-byte frames.
	if p.C.BytesSent.Load() != 4*90 || p.C.BytesReceived.Load() != 4*90 || p.C.Requests.Load() != 4 || p.C.Replies.Load() != 4 {
		t.Fatalf("counters sent %d received %d", p.C.BytesSent.Load(), p.C.BytesReceived.Load())
	}
}

func TestStaleAndForeignRepliesAreSkippedAndCounted(t *testing.T) {
	f := &fakeServer{now: 1_795_000_000_000_000_000, stale: true}
	p := NewProber(ProbeConfig{Server: server}, f)
	res, err := p.Poll(context.Background())
	if err != nil || len(res.Samples) != 1 {
		t.Fatalf("poll %v, %d samples", err, len(res.Samples))
	}
	if p.C.Rejects[RejectOrigin].Load() != 1 {
		t.Fatalf("origin rejects %d", p.C.Rejects[RejectOrigin].Load())
	}
	f = &fakeServer{now: 1_795_000_000_000_000_000, from: netip.MustParseAddrPort("10.6.6.6:123")}
	p = NewProber(ProbeConfig{Server: server, Timeout: 20 * time.Millisecond}, f)
	if _, err := p.Poll(context.Background()); err == nil || p.C.Rejects[RejectSource].Load() != 1 {
		t.Fatalf("reply from another host: %v, source rejects %d", err, p.C.Rejects[RejectSource].Load())
	}
}

func TestKissOfDeath(t *testing.T) {
	f := &fakeServer{now: 1_795_000_000_000_000_000, kiss: "RATE"}
	p := NewProber(ProbeConfig{Server: server, Burst: 3, BurstSpacing: time.Millisecond}, f)
	_, err := p.Poll(context.Background())
	if RejectOf(errors.Unwrap(err)) != RejectKoD && p.C.KissRate.Load() != 1 {
		t.Fatalf("RATE kiss: %v", err)
	}
	if p.RateFactor() != 2 || f.i != 1 {
		t.Fatalf("rate factor %d after RATE, %d requests sent in the burst (want 2 and 1)", p.RateFactor(), f.i)
	}
	f.kiss = "DENY"
	p.Poll(context.Background())
	sent := f.i
	if _, err := p.Poll(context.Background()); !errors.Is(err, ErrHeldOff) || f.i != sent {
		t.Fatalf("after DENY: %v, %d more requests", err, f.i-sent)
	}
}

func TestTimeoutIsCountedAndReported(t *testing.T) {
	f := &fakeServer{now: 1, silent: true}
	p := NewProber(ProbeConfig{Server: server, Timeout: 10 * time.Millisecond}, f)
	if _, err := p.Poll(context.Background()); err == nil || p.C.Timeouts.Load() != 1 {
		t.Fatalf("silent server: %v, timeouts %d", err, p.C.Timeouts.Load())
	}
}

func TestDispersion(t *testing.T) {
	// precision 2^-20 s = 954 ns, plus 15 ppm of a 1 ms round trip = 15 ns.
	if got := dispersion(-20, 0, 1_000_000); got != 953+15 && got != 954+15 {
		t.Fatalf("dispersion %d", got)
	}
}

// A burst stopped by its context keeps the samples it took: they are results,
// not a failure.
func TestBurstStoppedMidwayKeepsItsSamples(t *testing.T) {
	// Stopped once the second request is out, not by a deadline at 300 ms
	// between requests 200 ms apart (a machine stalled for 100 ms sends the
	// second one after it): the second answer is taken, the third request
	// never sent.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fakeServer{now: 1_795_000_000_000_000_000, delays: []int64{40_000, 12_000, 30_000}, sent: func(n int) {
		if n == 2 {
			cancel()
		}
	}}
	p := NewProber(ProbeConfig{Server: server, Burst: 3, BurstSpacing: 200 * time.Millisecond}, f)
	res, err := p.Poll(ctx)
	if err != nil {
		t.Fatalf("a burst stopped after 2 samples: %v", err)
	}
	if len(res.Samples) != 2 || res.Best != 1 || f.i != 2 {
		t.Fatalf("samples %d best %d after %d requests, want 2, 1 and 2", len(res.Samples), res.Best, f.i)
	}
	// Stopped before any sample: that is the context's error.
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	p = NewProber(ProbeConfig{Server: server, Burst: 3, BurstSpacing: time.Second}, &fakeServer{now: 1_795_000_000_000_000_000, from: netip.MustParseAddrPort("10.6.6.6:123")})
	p.cfg.Timeout = 10 * time.Millisecond
	if _, err := p.Poll(ctx); err == nil {
		t.Fatal("a burst with no sample stopped by its context: no error")
	}
}
