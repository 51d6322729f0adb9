package ntp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/sockts"
)

// Server is a server as configured: an IP address or a host name (resolved
// when it is polled, so that a board may start before its DNS answers), and
// a port.
type Server struct {
	Host string     // a lower-case host name without its final dot, "" for an address
	Addr netip.Addr // the address, when the server is given by one (unmapped)
	Port uint16
}

// String is the server's canonical form, host:port: one server written two
// ways (a v4-mapped address, a name in capitals, the default port spelt out)
// reads the same.
func (s Server) String() string {
	if s.Host == "" {
		return netip.AddrPortFrom(s.Addr, s.Port).String()
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(int(s.Port)))
}

// ParseServer parses "host", "host:port", "address", "address:port" or
// "[v6 address]:port"; the port defaults to 123.
func ParseServer(s string) (Server, error) {
	host, port := s, "123"
	if strings.HasPrefix(s, "[") || strings.Count(s, ":") == 1 {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return Server{}, fmt.Errorf("%q is not host, host:port or [address]:port: %v", s, err)
		}
		host, port = h, p
	}
	pn, err := strconv.ParseUint(port, 10, 16)
	if err != nil || pn == 0 {
		return Server{}, fmt.Errorf("%q: port %q is not a number within 1..65535", s, port)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return Server{Addr: a.Unmap(), Port: uint16(pn)}, nil
	}
	if host == "" || len(host) > 253 || strings.ContainsAny(host, " /\\@[]") {
		return Server{}, fmt.Errorf("%q: %q is not a host name or address", s, host)
	}
	return Server{Host: strings.ToLower(strings.TrimSuffix(host, ".")), Port: uint16(pn)}, nil
}

// Socket is a probe's socket as a ServerProbe owns it: a Conn it closes, with
// the timestamping option in force (a sockts.Conn; ntptest.Server in tests).
type Socket interface {
	Conn
	Option() (string, error)
	Close() error
}

// Listen opens a timestamping socket for probing server, bound to the
// unspecified address of the server's family.
func Listen(server netip.AddrPort, opts sockts.Options) (*sockts.Conn, error) {
	laddr := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if server.Addr().Is6() && !server.Addr().Is4In6() {
		laddr = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	return sockts.ListenUDP(laddr, opts)
}

// ResolveAfter is how many polls in a row may fail before a server given by
// name is resolved again (it may have moved).
const ResolveAfter = 4

// maxBackoff is the largest power of two a failing server's poll interval is
// stretched by (64x while unreachable).
const maxBackoff = 6

// ServerProbe probes one configured server: a Prober of its address, with
// the server's name resolved when it is first polled and again after
// ResolveAfter failed polls in a row, a socket of the address's family, and
// the failures that stretch its poll interval. A name that does not resolve
// is a failed poll, counted (ResolveErrors), never fatal: a server that
// resolved before keeps being polled at its old address.
type ServerProbe struct {
	srv      Server
	cfg      ProbeConfig
	open     func(netip.AddrPort) (Socket, error)
	addr     netip.AddrPort // invalid until a name resolves
	conn     Socket         // nil likewise
	prober   *Prober        // nil likewise
	failures atomic.Int64   // consecutive failed polls

	// Resolve looks a host name up: LookupHost unless a test sets another.
	Resolve func(ctx context.Context, host string) (netip.Addr, error)
	// Resolves counts names resolved (the first time and each time again),
	// ResolveErrors lookups that failed.
	Resolves, ResolveErrors atomic.Uint64
}

// NewServerProbe probes srv with cfg (cfg.Server is set to each address the
// server has), over sockets open makes: one given by address is polled over
// the socket opened here (its error is NewServerProbe's), one given by name
// over a socket opened for its first address, and for a later address of the
// other family. cfg.Timeout bounds each lookup too.
func NewServerProbe(srv Server, cfg ProbeConfig, open func(netip.AddrPort) (Socket, error)) (*ServerProbe, error) {
	p := &ServerProbe{srv: srv, cfg: cfg, open: open, Resolve: LookupHost}
	if srv.Host == "" {
		addr := netip.AddrPortFrom(srv.Addr, srv.Port)
		conn, err := open(addr)
		if err != nil {
			return nil, err
		}
		p.attach(addr, conn)
	}
	return p, nil
}

// LookupHost is a host name's first address, in the resolver's order.
func LookupHost(ctx context.Context, host string) (netip.Addr, error) {
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(addrs) == 0 {
		return netip.Addr{}, fmt.Errorf("%s: no address", host)
	}
	return addrs[0].Unmap(), nil
}

// attach polls addr over conn from now on.
func (p *ServerProbe) attach(addr netip.AddrPort, conn Socket) {
	p.addr, p.conn = addr, conn
	if p.prober == nil {
		p.cfg.Server = addr
		p.prober = NewProber(p.cfg, conn)
		return
	}
	p.prober.Retarget(addr, conn)
}

// Server is the server as configured.
func (p *ServerProbe) Server() Server { return p.srv }

// Addr is the address polled; invalid until the server's name resolves.
func (p *ServerProbe) Addr() netip.AddrPort { return p.addr }

// Prober is the prober of the address (its counters go on across
// addresses); nil until the server's name first resolves.
func (p *ServerProbe) Prober() *Prober { return p.prober }

// Socket is the socket polled over; nil until the server's name first
// resolves.
func (p *ServerProbe) Socket() Socket { return p.conn }

// Failures is how many polls in a row have failed.
func (p *ServerProbe) Failures() int64 { return p.failures.Load() }

// Wait is how long to wait after a poll before the next: interval,
// stretched by the server's RATE kisses and doubled for each failed poll in
// a row, up to 64 times.
func (p *ServerProbe) Wait(interval time.Duration) time.Duration {
	if p.prober != nil {
		interval *= time.Duration(p.prober.RateFactor())
	}
	if f := p.failures.Load(); f > 0 {
		interval *= time.Duration(1 << min(f, maxBackoff))
	}
	return interval
}

// Prepare makes sure there is an address to poll, before each Poll: a server
// given by name is resolved when it has no address yet or has failed ResolveAfter polls in
// a row, and a socket of the address's family is opened when it needs one.
// An error (a failed poll) means there is nothing to poll.
func (p *ServerProbe) Prepare(ctx context.Context) error {
	if err := p.prepare(ctx); err != nil {
		p.failures.Add(1)
		return err
	}
	return nil
}

func (p *ServerProbe) prepare(ctx context.Context) error {
	if p.srv.Host == "" || (p.addr.IsValid() && p.failures.Load() < ResolveAfter) {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	a, err := p.Resolve(rctx, p.srv.Host)
	cancel()
	if err != nil {
		p.ResolveErrors.Add(1)
		if p.addr.IsValid() {
			return nil // keep polling the address it had
		}
		return fmt.Errorf("ntp %s: resolving %s: %w", p.srv, p.srv.Host, err)
	}
	p.Resolves.Add(1)
	addr := netip.AddrPortFrom(a, p.srv.Port)
	if addr == p.addr {
		return nil
	}
	conn := p.conn
	if conn == nil || a.Is4() != p.addr.Addr().Is4() {
		c, err := p.open(addr)
		if err != nil {
			return fmt.Errorf("ntp %s: %w", p.srv, err)
		}
		if conn != nil {
			conn.Close()
		}
		conn = c
	}
	p.attach(addr, conn)
	return nil
}

// Poll runs one burst (Prober.Poll) of the address Prepare made sure of,
// and counts it failed or not.
func (p *ServerProbe) Poll(ctx context.Context) (Result, error) {
	if p.prober == nil {
		p.failures.Add(1)
		return Result{Best: -1}, fmt.Errorf("ntp %s: no address to poll", p.srv)
	}
	res, err := p.prober.Poll(ctx)
	if err != nil {
		p.failures.Add(1)
		return res, err
	}
	p.failures.Store(0)
	return res, nil
}

// Close closes the socket, if there is one.
func (p *ServerProbe) Close() error {
	if p.conn == nil {
		return nil
	}
	return p.conn.Close()
}
