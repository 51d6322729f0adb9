package hca

// The authenticated UDP transport between agents.
//
// An Endpoint is one agent's socket: it answers pings addressed to its rank
// (Serve) and runs ping-pongs to its peers (Ping). Every datagram carries an
// HMAC-SHA256 with the cluster key (wire.go); unauthenticated, malformed,
// replayed, foreign-session and misaddressed datagrams are dropped and
// counted, never answered. Answers go to the address the peer list gives
// for the sender's rank, not to the datagram's source, so that a forged source
// cannot aim answers at a third party.
//
// Timestamps are user-space readings of the Endpoint's clock (by default
// CLOCK_MONOTONIC_RAW) just around the socket calls, not kernel timestamps:
// sockts gives kernel receive and transmit stamps in CLOCK_REALTIME or a PHC,
// and carrying those to MONOTONIC_RAW takes a translator, which is the clock
// source's job and not done here. A requester stamps Send before encoding the
// ping (the stamp is inside the MAC) and Recv right after the read, before
// verifying the pong; a responder answers with the midpoint of its clock
// just after the read and just before encoding the pong, so that each
// direction carries one HMAC computation and the midpoint is not biased by
// them.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/timebase"
)

// MinKeyLen is the shortest key LoadKey and Listen accept: HMAC-SHA256's
// block-sized security needs at least the 32 bytes of its output.
const MinKeyLen = 32

// DefaultPingTimeout is how long Ping waits for its pong when the
// EndpointConfig names no timeout.
const DefaultPingTimeout = 200 * time.Millisecond

// ErrNotLocal is an exchange asked of a PeerNetwork that another node would
// have to drive.
var ErrNotLocal = errors.New("hca: exchange not driven by the local rank")

// Key is a cluster key. It formats as "[key redacted]" with every fmt verb,
// so that a logged config or error does not show it.
type Key []byte

// Format implements fmt.Formatter.
func (Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[key redacted]")) }

// LoadKey reads a key file: its contents with surrounding whitespace trimmed,
// used as raw bytes (a hex or base64 text is used as its text). It needs at
// least MinKeyLen bytes. Errors name the file, never its contents.
func LoadKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hca: key file: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < MinKeyLen {
		clear(b)
		return nil, fmt.Errorf("hca: key file %s: %d bytes after trimming whitespace, want at least %d", path, len(key), MinKeyLen)
	}
	out := bytes.Clone(key)
	clear(b)
	return out, nil
}

// EndpointConfig describes an Endpoint.
type EndpointConfig struct {
	Addr    string                 // UDP address to bind, e.g. "0.0.0.0:7400" or "127.0.0.1:0"
	Rank    int                    // this agent's rank, 0..math.MaxInt32
	Key     Key                    // cluster key, at least MinKeyLen bytes (LoadKey)
	Peers   map[int]netip.AddrPort // rank → address; more with SetPeer
	Session uint64                 // sync session; change with SetSession
	// Clock reads this node's clock in ns; nil is CLOCK_MONOTONIC_RAW.
	Clock func() int64
	// Timeout bounds each Ping; zero is DefaultPingTimeout.
	Timeout time.Duration
}

// EndpointStats counts an Endpoint's datagrams. Every datagram read is
// Received and then either answered (a ping), delivered to its Ping (a pong),
// or counted under exactly one of the Dropped counters.
type EndpointStats struct {
	Sent                   uint64 // pings and pongs written (SendErrors of them failed)
	Received               uint64 // datagrams read
	Answered               uint64 // pings answered with a pong (written, maybe failed)
	Matched                uint64 // pongs delivered to a waiting Ping
	DroppedUnauthenticated uint64 // bad MAC: wrong key or tampered
	DroppedReplayed        uint64 // sequence number seen before or too old
	DroppedForeignSession  uint64 // authenticated, another session
	DroppedMalformed       uint64 // short, long, bad magic, unknown version or type
	DroppedMisaddressed    uint64 // authenticated, but for another rank or from a rank not in the peer list
	DroppedUnmatched       uint64 // authenticated pong no Ping waits for (late, after its timeout)
	Lost                   uint64 // Pings that timed out
	SendErrors             uint64 // writes that failed
}

type counters struct {
	sent, received, answered, matched                           atomic.Uint64
	unauth, replayed, foreign, malformed, misaddressed, unmatch atomic.Uint64
	lost, sendErrors                                            atomic.Uint64
}

// waiter is a Ping waiting for its pong.
type waiter struct {
	to   uint32
	send int64
	ch   chan int64 // the pong's Remote; Recv goes in recv first
	recv int64
}

// Endpoint is one agent's HCA socket. Serve must run for Ping to get answers
// (pongs arrive on the same socket). Methods are safe for concurrent use.
type Endpoint struct {
	conn    *net.UDPConn
	rank    uint32
	key     []byte
	clock   func() int64
	timeout time.Duration
	seq     atomic.Uint64
	serving atomic.Bool
	c       counters

	sendMu  sync.Mutex // guards txCodec and txBuf
	txCodec *Codec
	txBuf   []byte

	mu      sync.Mutex // guards what follows
	session uint64
	peers   map[uint32]netip.AddrPort
	waiters map[uint64]*waiter
	rxPing  map[uint32]*ReplayWindow
	rxPong  map[uint32]*ReplayWindow
}

// Listen binds cfg.Addr and returns an Endpoint that owns the socket.
func Listen(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Rank < 0 || cfg.Rank > math.MaxInt32 {
		return nil, fmt.Errorf("hca endpoint: rank %d out of range 0..%d", cfg.Rank, math.MaxInt32)
	}
	if len(cfg.Key) < MinKeyLen {
		return nil, fmt.Errorf("hca endpoint: key of %d bytes, want at least %d", len(cfg.Key), MinKeyLen)
	}
	if cfg.Clock == nil {
		if _, err := timebase.MonotonicRaw.Now(); err != nil {
			return nil, fmt.Errorf("hca endpoint: CLOCK_MONOTONIC_RAW: %w", err)
		}
		cfg.Clock = func() int64 { t, _ := timebase.MonotonicRaw.Now(); return t }
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultPingTimeout
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("hca endpoint: address %q: %w", cfg.Addr, err)
	}
	conn, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("hca endpoint: %w", err)
	}
	e := &Endpoint{
		conn:    conn,
		rank:    uint32(cfg.Rank),
		key:     bytes.Clone(cfg.Key),
		clock:   cfg.Clock,
		timeout: cfg.Timeout,
		txCodec: NewCodec(cfg.Key),
		txBuf:   make([]byte, 0, MessageLen),
		session: cfg.Session,
		peers:   make(map[uint32]netip.AddrPort),
		waiters: make(map[uint64]*waiter),
		rxPing:  make(map[uint32]*ReplayWindow),
		rxPong:  make(map[uint32]*ReplayWindow),
	}
	for r, a := range cfg.Peers {
		if err := e.SetPeer(r, a); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return e, nil
}

// Rank is this endpoint's rank.
func (e *Endpoint) Rank() int { return int(e.rank) }

// LocalAddr is the bound address (with the port chosen for ":0").
func (e *Endpoint) LocalAddr() netip.AddrPort {
	return e.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// SetPeer adds or changes the address of a rank.
func (e *Endpoint) SetPeer(rank int, addr netip.AddrPort) error {
	if rank < 0 || rank > math.MaxInt32 || uint32(rank) == e.rank {
		return fmt.Errorf("hca endpoint %d: peer rank %d invalid or its own", e.rank, rank)
	}
	if !addr.IsValid() {
		return fmt.Errorf("hca endpoint %d: peer %d: invalid address", e.rank, rank)
	}
	e.mu.Lock()
	e.peers[uint32(rank)] = addr
	e.mu.Unlock()
	return nil
}

// SetSession starts a new sync session: datagrams of other sessions are
// dropped from now on, and the replay windows start afresh (a restarted
// peer's sequence numbers start again in its new session).
func (e *Endpoint) SetSession(id uint64) {
	e.mu.Lock()
	e.session = id
	for _, w := range e.rxPing {
		w.Reset()
	}
	for _, w := range e.rxPong {
		w.Reset()
	}
	e.mu.Unlock()
}

// Stats returns the counters.
func (e *Endpoint) Stats() EndpointStats {
	c := &e.c
	return EndpointStats{
		Sent: c.sent.Load(), Received: c.received.Load(), Answered: c.answered.Load(), Matched: c.matched.Load(),
		DroppedUnauthenticated: c.unauth.Load(), DroppedReplayed: c.replayed.Load(),
		DroppedForeignSession: c.foreign.Load(), DroppedMalformed: c.malformed.Load(),
		DroppedMisaddressed: c.misaddressed.Load(), DroppedUnmatched: c.unmatch.Load(),
		Lost: c.lost.Load(), SendErrors: c.sendErrors.Load(),
	}
}

// Close closes the socket; a running Serve returns.
func (e *Endpoint) Close() error {
	if err := e.conn.Close(); err != nil {
		return fmt.Errorf("hca endpoint %d: close: %w", e.rank, err)
	}
	return nil
}

// Ping runs one ping-pong with rank to: it sends a ping and waits for the
// matching pong (same session, sequence number, ranks and echoed send stamp)
// up to the Endpoint's timeout, after which the error wraps ErrLost. Serve
// must be running.
func (e *Endpoint) Ping(ctx context.Context, to int) (Exchange, error) {
	if to < 0 || to > math.MaxInt32 {
		return Exchange{}, fmt.Errorf("hca endpoint %d: ping rank %d: out of range", e.rank, to)
	}
	e.mu.Lock()
	addr, ok := e.peers[uint32(to)]
	session := e.session
	e.mu.Unlock()
	if !ok {
		return Exchange{}, fmt.Errorf("hca endpoint %d: ping rank %d: not a peer", e.rank, to)
	}
	seq := e.seq.Add(1)
	w := &waiter{to: uint32(to), ch: make(chan int64, 1)}

	e.sendMu.Lock()
	w.send = e.clock()
	e.mu.Lock()
	e.waiters[seq] = w
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiters, seq)
		e.mu.Unlock()
	}()
	e.txBuf = e.txCodec.Append(e.txBuf[:0], Message{
		Type: MsgPing, Session: session, From: e.rank, To: uint32(to), Seq: seq, Send: w.send,
	})
	e.c.sent.Add(1)
	_, err := e.conn.WriteToUDPAddrPort(e.txBuf, addr)
	e.sendMu.Unlock()
	if err != nil {
		e.c.sendErrors.Add(1)
		return Exchange{}, fmt.Errorf("hca endpoint %d: ping rank %d at %s: %w", e.rank, to, addr, err)
	}

	t := time.NewTimer(e.timeout)
	defer t.Stop()
	select {
	case remote := <-w.ch:
		return Exchange{From: int(e.rank), To: to, Send: w.send, Remote: remote, Recv: w.recv}, nil
	case <-t.C:
		e.c.lost.Add(1)
		return Exchange{}, fmt.Errorf("hca endpoint %d: ping rank %d seq %d: no answer in %v: %w", e.rank, to, seq, e.timeout, ErrLost)
	case <-ctx.Done():
		return Exchange{}, fmt.Errorf("hca endpoint %d: ping rank %d seq %d: %w", e.rank, to, seq, ctx.Err())
	}
}

// Serve reads the socket until ctx ends (it then returns ctx's error) or the
// socket is closed: it answers pings and hands pongs to their Pings. Only one
// Serve may run at a time. It closes nothing; Close is the owner's.
func (e *Endpoint) Serve(ctx context.Context) error {
	if !e.serving.CompareAndSwap(false, true) {
		return fmt.Errorf("hca endpoint %d: already serving", e.rank)
	}
	defer e.serving.Store(false)
	if err := e.conn.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("hca endpoint %d: %w", e.rank, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = e.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()

	codec := NewCodec(e.key)
	buf := make([]byte, 2048) // more than MessageLen, so that long datagrams show
	out := make([]byte, 0, MessageLen)
	for {
		n, _, err := e.conn.ReadFromUDPAddrPort(buf)
		now := e.clock()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("hca endpoint %d: serve: %w", e.rank, err)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A deadline left by an earlier Serve's context: clear it
				// rather than spin on it.
				if err := e.conn.SetReadDeadline(time.Time{}); err != nil {
					return fmt.Errorf("hca endpoint %d: serve: %w", e.rank, err)
				}
				continue
			}
			return fmt.Errorf("hca endpoint %d: serve: read: %w", e.rank, err)
		}
		e.c.received.Add(1)
		out = e.handle(codec, buf[:n], now, out)
	}
}

// handle processes one datagram read at now; out is a scratch buffer.
func (e *Endpoint) handle(codec *Codec, b []byte, now int64, out []byte) []byte {
	m, err := codec.Decode(b)
	switch {
	case errors.Is(err, ErrBadMAC):
		e.c.unauth.Add(1)
		return out
	case err != nil:
		e.c.malformed.Add(1)
		return out
	}
	e.mu.Lock()
	if m.Session != e.session {
		e.mu.Unlock()
		e.c.foreign.Add(1)
		return out
	}
	addr, known := e.peers[m.From]
	if m.To != e.rank || !known {
		e.mu.Unlock()
		e.c.misaddressed.Add(1)
		return out
	}
	windows := e.rxPing
	if m.Type == MsgPong {
		windows = e.rxPong
	}
	win := windows[m.From]
	if win == nil {
		win = new(ReplayWindow)
		windows[m.From] = win
	}
	if !win.Accept(m.Seq) {
		e.mu.Unlock()
		e.c.replayed.Add(1)
		return out
	}
	if m.Type == MsgPong {
		w := e.waiters[m.Seq]
		if w == nil || w.to != m.From || w.send != m.Send {
			e.mu.Unlock()
			e.c.unmatch.Add(1)
			return out
		}
		delete(e.waiters, m.Seq)
		e.mu.Unlock()
		w.recv = now
		e.c.matched.Add(1)
		w.ch <- m.Remote // buffered, and only ever sent once: the waiter is gone from the map
		return out
	}
	e.mu.Unlock()

	// A ping: answer with the midpoint of arrival and departure.
	before := e.clock()
	out = codec.Append(out[:0], Message{
		Type: MsgPong, Session: m.Session, From: e.rank, To: m.From, Seq: m.Seq, Send: m.Send,
		Remote: now + (before-now)/2,
	})
	// Counted before the write, so that the count is up when the pong lands.
	e.c.sent.Add(1)
	e.c.answered.Add(1)
	if _, err := e.conn.WriteToUDPAddrPort(out, addr); err != nil {
		e.c.sendErrors.Add(1)
	}
	return out
}

// PeerNetwork is the Network an agent's algorithm harness sees when this node
// drives the synchronisation: exchanges from the local rank to any peer run
// over its Endpoint. Exchanges between two other ranks would need those nodes
// to be told to run them, which this transport does not do; they fail with an
// error wrapping ErrNotLocal. So only schedules in which the local rank
// measures every pair (offset-only and JK-style star schedules with the local
// rank as their root) run on it; the tree algorithms need a distributed
// driver.
type PeerNetwork struct {
	ep   *Endpoint
	size int
}

// NewPeerNetwork returns the Network of p ranks driven by ep. ep's Serve must
// run while it is used.
func NewPeerNetwork(ep *Endpoint, p int) (*PeerNetwork, error) {
	if p < 1 || ep.Rank() >= p {
		return nil, fmt.Errorf("hca peer network: %d ranks, local rank %d", p, ep.Rank())
	}
	return &PeerNetwork{ep: ep, size: p}, nil
}

// Size implements Network.
func (n *PeerNetwork) Size() int { return n.size }

// Exchange implements Network for from equal to the local rank.
func (n *PeerNetwork) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if from != n.ep.Rank() {
		return Exchange{}, fmt.Errorf("hca peer network: exchange %d->%d on rank %d: %w", from, to, n.ep.Rank(), ErrNotLocal)
	}
	if to < 0 || to >= n.size {
		return Exchange{}, fmt.Errorf("hca peer network: exchange %d->%d: rank out of range 0..%d", from, to, n.size-1)
	}
	return n.ep.Ping(ctx, to)
}
