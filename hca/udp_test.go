package hca

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/timebase"
)

// fakeClock is the test's monotonic time plus a known offset.
func fakeClock(base time.Time, off int64) func() int64 {
	return func() int64 { return int64(time.Since(base)) + off }
}

func newEndpoint(t *testing.T, rank int, key []byte, clock func() int64, timeout time.Duration) *Endpoint {
	t.Helper()
	return listen(t, EndpointConfig{Addr: "127.0.0.1:0", Rank: rank, Key: key, Session: 0x5e55, Clock: clock, Timeout: timeout})
}

// listen is Listen(cfg), closed when the test ends.
func listen(t *testing.T, cfg EndpointConfig) *Endpoint {
	t.Helper()
	e, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// serve runs e.Serve until the test ends and checks that it stops promptly
// with the context's error.
func serve(t *testing.T, e *Endpoint) {
	t.Helper()
	t.Cleanup(serving(e, t))
}

// serving starts e.Serve and returns what stops it and checks that it
// stopped promptly with the context's error.
func serving(e *Endpoint, t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx) }()
	return func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("endpoint %d: Serve returned %v, want context.Canceled", int(e.rank), err)
			}
		case <-time.After(time.Second):
			t.Errorf("endpoint %d: Serve did not stop within 1 s of its context ending", int(e.rank))
		}
	}
}

// mesh makes every endpoint a peer of every other.
func mesh(t *testing.T, eps ...*Endpoint) {
	t.Helper()
	for _, a := range eps {
		for _, b := range eps {
			if a != b {
				if err := a.SetPeer(int(b.rank), b.LocalAddr()); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// waitFor polls cond for up to 10 s (it was 1 s: a loaded machine may take
// that long to read a datagram; a count that never comes fails all the same).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEndpointPing(t *testing.T) {
	base := time.Now()
	offs := []int64{0, 1_000_000_000, -3_500_000_123}
	var eps []*Endpoint
	for r, off := range offs {
		e := newEndpoint(t, r, testKey, fakeClock(base, off), time.Second)
		serve(t, e)
		eps = append(eps, e)
	}
	mesh(t, eps...)

	ctx := context.Background()
	pairs := [][2]int{{0, 1}, {0, 2}, {1, 2}, {2, 0}, {1, 0}, {0, 1}}
	for _, p := range pairs {
		from, to := p[0], p[1]
		x, err := eps[from].Ping(ctx, to)
		if err != nil {
			t.Fatalf("ping %d->%d: %v", from, to, err)
		}
		if x.From != from || x.To != to {
			t.Errorf("ping %d->%d: exchange %+v", from, to, x)
		}
		if x.rtt() < 0 {
			t.Errorf("ping %d->%d: RTT %d", from, to, x.rtt())
		}
		// The responder's clock, taken back to base time, lies between the
		// requester's send and receive, taken back likewise.
		remote := x.Remote - offs[to]
		if remote < x.Send-offs[from] || remote > x.Recv-offs[from] {
			t.Errorf("ping %d->%d: remote %d (base %d) outside [%d, %d]", from, to, x.Remote, remote, x.Send-offs[from], x.Recv-offs[from])
		}
	}
	var answered, matched uint64
	for _, e := range eps {
		s := e.Stats()
		answered += s.Answered
		matched += s.Matched
		if s.DroppedUnauthenticated+s.DroppedReplayed+s.DroppedForeignSession+s.DroppedMalformed+
			s.DroppedMisaddressed+s.DroppedUnmatched+s.Lost+s.SendErrors != 0 {
			t.Errorf("endpoint %d: drops on a clean run: %+v", int(e.rank), s)
		}
	}
	if answered != uint64(len(pairs)) || matched != uint64(len(pairs)) {
		t.Errorf("answered %d, matched %d, want %d each", answered, matched, len(pairs))
	}

	// Concurrent pings from one endpoint match their own pongs.
	errs := make(chan error, 8)
	for i := 0; i < cap(errs); i++ {
		go func() {
			x, err := eps[0].Ping(ctx, 1+i%2)
			if err == nil && x.To != 1+i%2 {
				err = errors.New("answer from the wrong rank")
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Errorf("concurrent ping: %v", err)
		}
	}

	// The driver's PeerNetwork: its own exchanges, and exchanges between
	// two other ranks run at its request, all in the ranks' own clocks.
	n, err := NewPeerNetwork(eps[0], len(eps))
	if err != nil {
		t.Fatal(err)
	}
	if n.Size() != 3 {
		t.Errorf("Size %d", n.Size())
	}
	for _, p := range [][2]int{{0, 2}, {1, 2}, {2, 1}, {2, 0}} {
		from, to := p[0], p[1]
		x, err := n.Exchange(ctx, from, to)
		if err != nil {
			t.Fatalf("PeerNetwork exchange %d->%d: %v", from, to, err)
		}
		remote := x.Remote - offs[to]
		if x.From != from || x.To != to || x.rtt() < 0 || remote < x.Send-offs[from] || remote > x.Recv-offs[from] {
			t.Errorf("PeerNetwork exchange %d->%d: %+v: not in the ranks' clocks", from, to, x)
		}
	}
	if got := eps[1].Stats().Runs + eps[2].Stats().Runs; got != 3 {
		t.Errorf("%d runs carried out, want 3", got)
	}
	for _, p := range [][2]int{{0, 3}, {1, 1}, {-1, 0}} {
		if _, err := n.Exchange(ctx, p[0], p[1]); err == nil {
			t.Errorf("PeerNetwork exchange %d->%d of 3 ranks succeeded", p[0], p[1])
		}
	}
	var _ Network = n
}

func TestEndpointAnswerDelay(t *testing.T) {
	// With a 200 ms answer delay every ping-pong takes at least 200 ms (100
	// ms before the ping leaves, 100 ms before its pong does), the round
	// trip at least the responder's 100 ms, the responder's reading stays
	// at the midpoint (within the loopback's own round trip of the
	// requester's midpoint), and pings to two delayed responders overlap:
	// each was sent before the other's answer came. (It was a 4 ms delay
	// and both answered within 8 ms: a loaded machine's timers wake that
	// late; the overlap stands unless one ping starts 100 ms after the
	// other, and it alone is what running side by side means.)
	const delay = 200 * time.Millisecond
	base := time.Now()
	offs := []int64{0, 2_000_000_000, -5_000_000}
	var eps []*Endpoint
	for r := range 3 {
		e := listen(t, EndpointConfig{Addr: "127.0.0.1:0", Rank: r, Key: testKey, Session: 0x5e55,
			Clock: fakeClock(base, offs[r]), Timeout: 10 * time.Second, AnswerDelay: delay})
		serve(t, e)
		eps = append(eps, e)
	}
	mesh(t, eps...)
	ctx := context.Background()
	for range 5 {
		t0 := time.Now()
		x, err := eps[0].Ping(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if took := time.Since(t0); took < delay {
			t.Fatalf("ping-pong took %v with a %v answer delay", took, delay)
		}
		if x.rtt() < int64(delay/2) {
			t.Fatalf("round trip %v with a %v answer delay", time.Duration(x.rtt()), delay)
		}
		slack := x.rtt() - int64(delay/2) // the loopback's own round trip
		mid := (x.Send + x.Recv) / 2
		if d := x.Remote - offs[1] - mid; d < -slack || d > slack {
			t.Errorf("responder's reading %d ns from the requester's midpoint, want within ±%d", d, slack)
		}
	}
	var wg sync.WaitGroup
	xs := make([]Exchange, 2)
	t0 := time.Now()
	for r := 1; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if xs[r-1], err = eps[0].Ping(ctx, r); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	t.Logf("two concurrent pings to delayed responders took %v (%v each alone)", time.Since(t0), delay)
	// Rank 0's clock stamped both: one after the other, the second is sent
	// after the first's answer came.
	if a, b := xs[0], xs[1]; a.Send >= b.Recv || b.Send >= a.Recv {
		t.Errorf("pings to delayed responders one after the other: sent at %d and %d, answered at %d and %d ns",
			a.Send, b.Send, a.Recv, b.Recv)
	}
}

func TestEndpointWrongKey(t *testing.T) {
	a := newEndpoint(t, 0, testKey, nil, 150*time.Millisecond)
	b := newEndpoint(t, 1, []byte("a-different-key-of-32-bytes-long"), nil, 150*time.Millisecond)
	serve(t, a)
	serve(t, b)
	mesh(t, a, b)
	ctx := context.Background()
	for _, tc := range []struct{ from, to *Endpoint }{{a, b}, {b, a}} {
		_, err := tc.from.Ping(ctx, int(tc.to.rank))
		if !errors.Is(err, ErrLost) {
			t.Errorf("ping %d->%d with mismatched keys: %v, want ErrLost", int(tc.from.rank), int(tc.to.rank), err)
		}
		if err != nil && (strings.Contains(err.Error(), string(testKey)) || strings.Contains(err.Error(), "a-different-key")) {
			t.Errorf("error mentions a key: %v", err)
		}
	}
	// The drops are counted when each endpoint's Serve reads the datagram,
	// which a loaded machine may do after the sender's 150 ms are up: waited
	// for, not read at once.
	for _, e := range []*Endpoint{a, b} {
		waitFor(t, fmt.Sprintf("endpoint %d to drop the ping", int(e.rank)), func() bool { return e.Stats().DroppedUnauthenticated > 0 })
		s := e.Stats()
		if s.DroppedUnauthenticated != 1 || s.Answered != 0 || s.Lost != 1 {
			t.Errorf("endpoint %d: %+v, want 1 unauthenticated, 0 answered, 1 lost", int(e.rank), s)
		}
	}
}

func TestEndpointContextCancel(t *testing.T) {
	a := newEndpoint(t, 0, testKey, nil, time.Second)
	serve(t, a)
	// A peer that never answers: a socket nobody reads.
	sink, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	if err := a.SetPeer(1, sink.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := a.Ping(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ping with an ending context: %v", err)
	}
	if _, err := a.Ping(context.Background(), 7); err == nil {
		t.Error("ping to a rank that is no peer succeeded")
	}
	if err := a.Serve(context.Background()); err == nil {
		t.Error("a second Serve started")
	}
}

// TestEndpointDrops feeds a responder captured, replayed, truncated,
// tampered, foreign-session and misaddressed datagrams from a raw socket.
func TestEndpointDrops(t *testing.T) {
	a := newEndpoint(t, 0, testKey, nil, 150*time.Millisecond)
	b := newEndpoint(t, 1, testKey, nil, time.Second)
	serve(t, a)
	serve(t, b)
	if err := b.SetPeer(0, a.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	// Capture a's ping to rank 1 at a sniffer standing in for b.
	sniffer, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer sniffer.Close()
	if err := a.SetPeer(1, sniffer.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	// The sniffer sends from a peer's address (rank 2 of b's list): from
	// any other address b drops every datagram unread
	// (TestEndpointDropsUnknownSources).
	if err := b.SetPeer(2, sniffer.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ping(context.Background(), 1); !errors.Is(err, ErrLost) {
		t.Fatalf("ping to the sniffer: %v, want ErrLost", err)
	}
	buf := make([]byte, 2048)
	if err := sniffer.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	n, _, err := sniffer.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	captured := bytes.Clone(buf[:n])
	if m, err := decode(testKey, captured); err != nil || m.Type != msgPing || m.From != 0 || m.To != 1 {
		t.Fatalf("captured %+v, %v", m, err)
	}

	to := b.LocalAddr()
	send := func(p []byte) {
		t.Helper()
		if _, err := sniffer.WriteToUDPAddrPort(p, to); err != nil {
			t.Fatal(err)
		}
	}
	stats := func() EndpointStats { return b.Stats() }

	// The first copy is answered (to a's address from the peer list, not the
	// sniffer); a drops the pong unread: b's address is no peer of a's,
	// whose rank 1 is the sniffer.
	send(captured)
	waitFor(t, "the captured ping's answer", func() bool { return stats().Answered == 1 })
	waitFor(t, "a to drop the pong", func() bool { return a.Stats().DroppedUnknownSource == 1 })
	// Replays are dropped, not answered.
	send(captured)
	send(captured)
	waitFor(t, "replays to be counted", func() bool { return stats().DroppedReplayed == 2 })

	send(captured[:messageLen-10])
	waitFor(t, "the truncated datagram", func() bool { return stats().DroppedMalformed == 1 })
	send(append(bytes.Clone(captured), 0))
	waitFor(t, "the long datagram", func() bool { return stats().DroppedMalformed == 2 })

	tampered := bytes.Clone(captured)
	tampered[43]++ // another sequence number, MAC unchanged
	send(tampered)
	waitFor(t, "the tampered datagram", func() bool { return stats().DroppedUnauthenticated == 1 })

	foreign := encode(testKey, message{Type: msgPing, Session: 0xbad, Epoch: 7, From: 0, To: 1, Seq: 1000})
	send(foreign)
	waitFor(t, "the foreign session", func() bool { return stats().DroppedForeignSession == 1 })

	for _, m := range []message{
		{Type: msgPing, Session: 0x5e55, Epoch: 7, From: 0, To: 2, Seq: 1001}, // for another rank
		{Type: msgPing, Session: 0x5e55, Epoch: 7, From: 9, To: 1, Seq: 1002}, // from no peer
	} {
		send(encode(testKey, m))
	}
	waitFor(t, "the misaddressed datagrams", func() bool { return stats().DroppedMisaddressed == 2 })

	s := stats()
	if s.Answered != 1 || s.Received != 9 {
		t.Errorf("responder: %+v, want 1 answered of 9 received", s)
	}

	// A real exchange still works, and b's replay window takes a's next
	// sequence number.
	if err := a.SetPeer(1, b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ping(context.Background(), 1); err != nil {
		t.Fatalf("ping after the drops: %v", err)
	}

	// A new session: the old capture is foreign now.
	a.setSession(0x5e56)
	b.setSession(0x5e56)
	send(captured)
	waitFor(t, "the capture in a new session", func() bool { return stats().DroppedForeignSession == 2 })
	if _, err := a.Ping(context.Background(), 1); err != nil {
		t.Fatalf("ping in the new session: %v", err)
	}
}

// TestEndpointDropsUnknownSources: a datagram from an address no peer has
// is dropped unread and counted (dropped_unknown_source), not answered,
// even a valid ping (captured from a, sent again by a stranger with the
// key); a real peer's pings are answered; a peer's earlier address, once
// SetPeer moved it, is a stranger's. Before, the stranger's copy was
// decoded and answered.
func TestEndpointDropsUnknownSources(t *testing.T) {
	a := newEndpoint(t, 0, testKey, nil, time.Second)
	b := newEndpoint(t, 1, testKey, nil, time.Second)
	serve(t, a)
	serve(t, b)
	mesh(t, a, b)
	stranger, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	ping := encode(testKey, message{Type: msgPing, Session: 0x5e55, Epoch: 7, From: 0, To: 1, Seq: 1})
	for i := range 3 {
		if _, err := stranger.WriteToUDPAddrPort(ping, b.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the stranger's datagram", func() bool { return b.Stats().DroppedUnknownSource == uint64(i+1) })
	}
	if _, err := a.Ping(context.Background(), 1); err != nil {
		t.Fatalf("a peer's ping: %v", err)
	}
	s := b.Stats()
	if s.Answered != 1 || s.Received != 4 || s.DroppedReplayed != 0 || s.DroppedMisaddressed != 0 {
		t.Errorf("responder: %+v, want the peer's ping answered and the stranger's 3 dropped unread", s)
	}
	// Rank 0 moves to the stranger's address: a's datagrams are a
	// stranger's now, and the one from the new address is read (answered).
	if err := b.SetPeer(0, stranger.LocalAddr().(*net.UDPAddr).AddrPort()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := a.Ping(ctx, 1); err == nil {
		t.Error("a ping from rank 0's old address was answered")
	}
	waitFor(t, "rank 0's old address dropped", func() bool { return b.Stats().DroppedUnknownSource == 4 })
	if _, err := stranger.WriteToUDPAddrPort(ping, b.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the ping from rank 0's new address answered", func() bool { return b.Stats().Answered == 2 })
}

func TestListenErrors(t *testing.T) {
	for _, cfg := range []EndpointConfig{
		{Addr: "127.0.0.1:0", Rank: 0, Key: testKey[:31]},
		{Addr: "127.0.0.1:0", Rank: -1, Key: testKey},
		{Addr: "no such host:x", Rank: 0, Key: testKey},
		{Addr: "127.0.0.1:0", Rank: 0, Key: testKey, Peers: map[int]netip.AddrPort{0: netip.MustParseAddrPort("127.0.0.1:1")}},
	} {
		if e, err := Listen(cfg); err == nil {
			e.Close()
			t.Errorf("Listen(%+v) succeeded", cfg)
		} else if strings.Contains(err.Error(), string(testKey[:31])) {
			t.Errorf("error mentions the key: %v", err)
		}
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	key, err := LoadKey(write("good", "\n  "+string(testKey)+"\t\n"))
	if err != nil || !bytes.Equal(key, testKey) {
		t.Errorf("LoadKey: %q, %v", key, err)
	}
	secret := "short-secret-31-bytes-xxxxxxxxx"
	_, err = LoadKey(write("short", secret+"\n"))
	if err == nil {
		t.Error("LoadKey took a 31-byte key")
	} else if strings.Contains(err.Error(), "secret") {
		t.Errorf("error mentions the key: %v", err)
	}
	if _, err := LoadKey(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadKey of a missing file: %v", err)
	}
}

func TestCheckKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, key []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, key, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if err := CheckKeyFile(write("good", testKey, 0o600)); err != nil {
		t.Errorf("CheckKeyFile of a 0600 key: %v", err)
	}
	open := write("open", testKey, 0o644)
	if err := CheckKeyFile(open); err == nil || err.Error() != open+": mode 0644 lets others read the cluster key; make it 0600" {
		t.Errorf("CheckKeyFile of a 0644 key: %v", err)
	}
	if err := CheckKeyFile(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("CheckKeyFile of a missing file: %v", err)
	}
	if err := CheckKeyFile(write("short", testKey[:8], 0o600)); err == nil {
		t.Error("CheckKeyFile took an 8-byte key")
	}
}

func TestKeyRedacted(t *testing.T) {
	cfg := EndpointConfig{Addr: "x", Key: testKey}
	for _, f := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q"} {
		if s := fmt.Sprintf(f, cfg); strings.Contains(s, string(testKey)) || strings.Contains(s, fmt.Sprintf("%x", testKey[:8])) {
			t.Errorf("%s shows the key: %s", f, s)
		}
	}
}

// TestServeRestart: Serve stops with its context, starts again on the same
// socket, and returns when the owner closes the socket.
func TestServeRestart(t *testing.T) {
	a := newEndpoint(t, 0, testKey, nil, time.Second)
	b := newEndpoint(t, 1, testKey, nil, time.Second)
	serve(t, a)
	mesh(t, a, b)
	for i := 0; i < 3; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Serve(ctx) }()
		if _, err := a.Ping(context.Background(), 1); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: Serve returned %v", i, err)
			}
		case <-time.After(time.Second):
			t.Fatalf("round %d: Serve did not stop", i)
		}
	}
	done := make(chan error, 1)
	go func() { done <- b.Serve(context.Background()) }()
	if _, err := a.Ping(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	b.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Serve after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Serve did not return after Close")
	}
}

// taken is a model an endpoint's OnModel got.
type taken struct {
	rank, from int
	round      int64
	m          timebase.LinearModel
}

// modelMesh is three meshed endpoints on loopback, rank r's clock r ms
// ahead, each handing the models it takes to models (after hold, if set,
// returns); they do not serve yet.
func modelMesh(t *testing.T, models chan<- taken, hold func(rank int)) []*Endpoint {
	t.Helper()
	base := time.Now()
	var eps []*Endpoint
	for r := range 3 {
		eps = append(eps, listen(t, EndpointConfig{Addr: "127.0.0.1:0", Rank: r, Key: testKey, Session: 0x5e55,
			Clock: fakeClock(base, int64(r)*1_000_000), Timeout: 100 * time.Millisecond,
			OnModel: func(from int, round int64, m timebase.LinearModel) {
				if hold != nil {
					hold(r)
				}
				models <- taken{r, from, round, m}
			}}))
	}
	mesh(t, eps...)
	return eps
}

func TestEndpointRunsAndModels(t *testing.T) {
	models := make(chan taken, 4)
	eps := modelMesh(t, models, nil)
	for _, e := range eps {
		serve(t, e)
	}
	ctx := context.Background()

	// A model reaches its rank's callback and is acknowledged.
	want := timebase.LinearModel{Origin: 5, Intercept: -7, Slope: 3e-6, N: 20, MeanX: 9, ResidualNS: 1.5, SlopeErr: 1e-9, FloorNS: 30}
	if err := eps[0].SendModel(ctx, 1, 42, want); err != nil {
		t.Fatalf("SendModel: %v", err)
	}
	select {
	case g := <-models:
		if g.rank != 1 || g.from != 0 || g.round != 42 || g.m != want {
			t.Errorf("OnModel got %+v, want from 0 round 42 %+v", g, want)
		}
	default:
		t.Fatal("SendModel acknowledged before OnModel ran")
	}
	if s := eps[1].Stats(); s.Models != 1 {
		t.Errorf("rank 1 counted %d models, want 1", s.Models)
	}
	if err := eps[0].SendModel(ctx, 1, 43, timebase.LinearModel{Slope: math.NaN()}); err == nil {
		t.Error("SendModel of a NaN slope succeeded")
	}

	// A run whose pong never comes is reported lost by the runner.
	dead, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.LocalAddr().(*net.UDPAddr).AddrPort()
	dead.Close()
	if err := eps[1].SetPeer(2, deadAddr); err != nil {
		t.Fatal(err)
	}
	if _, err := eps[0].run(ctx, 1, 2, 1); !errors.Is(err, ErrLost) {
		t.Errorf("run 1->2 with rank 2 gone: %v, want ErrLost", err)
	}
	// Rank 1 counts its lost ping when its own 100 ms wait ends, which a
	// loaded machine may make later than the driver's: waited for.
	waitFor(t, "rank 1 to count its lost ping", func() bool { return eps[1].Stats().Lost > 0 })
	if s := eps[1].Stats(); s.Runs != 1 || s.Lost != 1 {
		t.Errorf("rank 1 after a lost run: runs %d lost %d, want 1 and 1", s.Runs, s.Lost)
	}
	// A run to a rank the runner does not know is dropped as misaddressed;
	// the driver's wait ends as lost.
	if _, err := eps[0].run(ctx, 1, 7, 1); !errors.Is(err, ErrLost) {
		t.Errorf("run 1->7: %v, want ErrLost", err)
	}
	waitFor(t, "rank 1 to drop the misaddressed run", func() bool { return eps[1].Stats().DroppedMisaddressed > 0 })
	if s := eps[1].Stats(); s.DroppedMisaddressed != 1 || s.Runs != 1 {
		t.Errorf("rank 1 after a run to an unknown rank: misaddressed %d runs %d, want 1 and 1", s.DroppedMisaddressed, s.Runs)
	}
}

func TestPeerNetworkParallel(t *testing.T) {
	var eps []*Endpoint
	base := time.Now()
	for r := range 4 {
		e := newEndpoint(t, r, testKey, fakeClock(base, 0), time.Second)
		serve(t, e)
		eps = append(eps, e)
	}
	mesh(t, eps...)
	n, err := NewPeerNetwork(eps[0], 4)
	if err != nil {
		t.Fatal(err)
	}
	pairs := [][2]int{{1, 0}, {3, 2}}
	xs := make([]Exchange, len(pairs))
	if err := n.Parallel(context.Background(), len(pairs), func(ctx context.Context, i int) error {
		var err error
		xs[i], err = n.Exchange(ctx, pairs[i][0], pairs[i][1])
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for i, x := range xs {
		if x.From != pairs[i][0] || x.To != pairs[i][1] || x.rtt() <= 0 {
			t.Errorf("pair %v: %+v", pairs[i], x)
		}
	}
	boom := errors.New("boom")
	if err := n.Parallel(context.Background(), 3, func(ctx context.Context, i int) error {
		if i == 1 {
			return boom
		}
		<-ctx.Done() // the others end when one fails
		return ctx.Err()
	}); err != boom {
		t.Errorf("Parallel returned %v, want the first error", err)
	}
}
