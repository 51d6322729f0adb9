package ntp

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/ntp/ntptest"
	"github.com/monagent/monagent/sockts"
)

// TestParseServer: one server written many ways reads as one host:port (the
// agent's server tag and duplicate check); a bad one is refused, saying why.
func TestParseServer(t *testing.T) {
	cases := []struct{ in, want, err string }{
		{in: "192.0.2.1", want: "192.0.2.1:123"},
		{in: "192.0.2.1:1123", want: "192.0.2.1:1123"},
		{in: "[::ffff:192.0.2.1]:123", want: "192.0.2.1:123"},
		{in: "2001:db8::2", want: "[2001:db8::2]:123"},
		{in: "[2001:db8::1]:4123", want: "[2001:db8::1]:4123"},
		{in: "NTP.Example.org.", want: "ntp.example.org:123"},
		{in: "ntp.example.org:123", want: "ntp.example.org:123"},
		{in: "127.0.0.1:99999", err: `"127.0.0.1:99999": port "99999" is not a number within 1..65535`},
		{in: "127.0.0.1:0", err: `port "0" is not a number within 1..65535`},
		{in: ":123", err: `":123": "" is not a host name or address`},
		{in: "a b", err: `is not a host name or address`},
		{in: "[2001:db8::1", err: `"[2001:db8::1" is not host, host:port or [address]:port: `},
	}
	for _, tc := range cases {
		s, err := ParseServer(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err == "" && s.String() != tc.want:
			t.Errorf("%q reads %s, want %s", tc.in, s, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want ...%s...", tc.in, err, tc.err)
		}
	}
}

// TestServerProbeResolvesWhenPolled: a name is looked up when first polled;
// while it does not resolve each poll fails, counted, with nothing to poll;
// once it does, one socket is opened and polled. After ResolveAfter failed
// polls in a row it is looked up again, and a failed lookup then keeps the
// address it had.
func TestServerProbeResolvesWhenPolled(t *testing.T) {
	srv := &ntptest.Server{Addr: netip.MustParseAddrPort("10.0.0.7:123"), Now: 1_795_000_000_000_000_000, Step: 7_000_000,
		OffsetNS: 4_000, DelayNS: 30_000, TxSource: sockts.SourceSoftware, RxSource: sockts.SourceSoftware}
	name, err := ParseServer("NTP.example.org")
	if err != nil {
		t.Fatal(err)
	}
	opened := 0
	p, err := NewServerProbe(name, ProbeConfig{Burst: 1, Basic: true, Timeout: 20 * time.Millisecond},
		func(netip.AddrPort) (Socket, error) { opened++; return srv, nil })
	if err != nil || opened != 0 {
		t.Fatalf("%v, %d sockets opened before the name resolved", err, opened)
	}
	answers := 0
	p.Resolve = func(_ context.Context, host string) (netip.Addr, error) {
		if host != "ntp.example.org" {
			t.Errorf("resolving %q", host)
		}
		if answers++; answers <= 2 || answers == 4 {
			return netip.Addr{}, errors.New("no such host")
		}
		return srv.Addr.Addr(), nil
	}
	ctx := context.Background()
	for i := range 2 {
		if err := p.Prepare(ctx); err == nil || err.Error() != "ntp ntp.example.org:123: resolving ntp.example.org: no such host" {
			t.Fatalf("lookup %d: %v", i, err)
		}
		if p.Prober() != nil || p.Socket() != nil || p.Addr().IsValid() {
			t.Fatalf("something to poll before the name resolved")
		}
	}
	if p.Failures() != 2 || p.Wait(time.Second) != 4*time.Second {
		t.Fatalf("%d failures, wait %s; want 2, 4s", p.Failures(), p.Wait(time.Second))
	}
	if err := p.Prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if res, err := p.Poll(ctx); err != nil || len(res.Samples) != 1 {
		t.Fatalf("poll: %v %v", res, err)
	}
	if p.Addr() != srv.Addr || p.Failures() != 0 || p.Resolves.Load() != 1 || p.ResolveErrors.Load() != 2 || opened != 1 {
		t.Fatalf("address %s, failures %d, resolves %d, resolve errors %d, sockets %d", p.Addr(), p.Failures(),
			p.Resolves.Load(), p.ResolveErrors.Load(), opened)
	}
	// The server falls silent: polls fail; the name is looked up again
	// after ResolveAfter of them. That lookup fails (the old address is
	// kept, no error); the next one resolves to the same address.
	srv.Silent = true
	for range ResolveAfter + 2 {
		if err := p.Prepare(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Poll(ctx); err == nil {
			t.Fatal("a silent server polled")
		}
	}
	if p.ResolveErrors.Load() != 3 || p.Resolves.Load() != 2 || p.Addr() != srv.Addr || opened != 1 {
		t.Fatalf("after %d failed polls: resolve errors %d, resolves %d, address %s, sockets %d", ResolveAfter+2,
			p.ResolveErrors.Load(), p.Resolves.Load(), p.Addr(), opened)
	}
	if p.Wait(time.Second) != 64*time.Second {
		t.Fatalf("wait %s after 6 failures", p.Wait(time.Second))
	}
	p.failures.Add(3)
	if p.Wait(time.Second) != 64*time.Second {
		t.Fatalf("wait %s after 9 failures, want 64s at most", p.Wait(time.Second))
	}
}

// closeCount is a socket that counts its closes.
type closeCount struct {
	*ntptest.Server
	closed *int
}

func (c closeCount) Close() error { *c.closed++; return nil }

// TestServerProbeChangesFamily: a name that moves to an address of the other
// family is polled over a new socket, the old one closed; a name that moves
// within its family keeps its socket.
func TestServerProbeChangesFamily(t *testing.T) {
	addrs := []string{"10.0.0.7", "10.0.0.8", "2001:db8::7"}
	var opened []netip.AddrPort
	closed := 0
	p, _ := NewServerProbe(Server{Host: "ntp.example.org", Port: 123}, ProbeConfig{Timeout: time.Second},
		func(a netip.AddrPort) (Socket, error) {
			opened = append(opened, a)
			return closeCount{&ntptest.Server{Addr: a}, &closed}, nil
		})
	for i, a := range addrs {
		p.Resolve = func(context.Context, string) (netip.Addr, error) { return netip.MustParseAddr(a), nil }
		p.failures.Store(ResolveAfter)
		if err := p.Prepare(context.Background()); err != nil {
			t.Fatal(err)
		}
		if p.Addr().Addr().String() != a || p.Prober().Server() != p.Addr() {
			t.Fatalf("step %d: polling %s (prober %s), want %s", i, p.Addr(), p.Prober().Server(), a)
		}
	}
	if len(opened) != 2 || opened[1].Addr().String() != "2001:db8::7" || closed != 1 {
		t.Fatalf("sockets opened for %v, %d closed; want one per family, the v4 one closed", opened, closed)
	}
	p.Close()
	if closed != 2 {
		t.Fatalf("%d closed after Close", closed)
	}
}

// TestServerProbeByAddress: a server given by address has its socket at once
// (or its error), and is polled without being looked up.
func TestServerProbeByAddress(t *testing.T) {
	srv := &ntptest.Server{Addr: netip.MustParseAddrPort("192.0.2.1:123"), Now: 1_795_000_000_000_000_000, Step: 7_000_000,
		DelayNS: 30_000, TxSource: sockts.SourceSoftware, RxSource: sockts.SourceSoftware}
	a := Server{Addr: srv.Addr.Addr(), Port: 123}
	refused := errors.New("no socket")
	if _, err := NewServerProbe(a, ProbeConfig{}, func(netip.AddrPort) (Socket, error) { return nil, refused }); err != refused {
		t.Fatalf("socket error %v", err)
	}
	p, err := NewServerProbe(a, ProbeConfig{Basic: true, Timeout: time.Second}, func(to netip.AddrPort) (Socket, error) {
		if to != srv.Addr {
			t.Errorf("socket for %s", to)
		}
		return srv, nil
	})
	if err != nil || p.Socket() == nil {
		t.Fatal(err)
	}
	p.Resolve = func(context.Context, string) (netip.Addr, error) { t.Fatal("looked up"); return netip.Addr{}, nil }
	p.failures.Store(ResolveAfter)
	if err := p.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Poll(context.Background()); err != nil || p.Failures() != 0 {
		t.Fatalf("poll: %v, %d failures", err, p.Failures())
	}
}

// TestSampleMode names the two ways an exchange is made (the mode tag).
func TestSampleMode(t *testing.T) {
	if m := (Sample{}).Mode(); m != "basic" {
		t.Errorf("basic sample: %q", m)
	}
	if m := (Sample{Interleaved: true}).Mode(); m != "interleaved" {
		t.Errorf("interleaved sample: %q", m)
	}
}
