package hca

// The authenticated UDP transport between agents.
//
// An Endpoint is one agent's socket: it answers pings addressed to its rank
// (Serve) and runs ping-pongs to its peers (Ping). Every datagram carries an
// HMAC-SHA256 with the cluster key (wire.go); datagrams from a source
// address no peer has (IP and port: a peer sends from the socket it
// listens on) are dropped unread, and unauthenticated, malformed,
// replayed, foreign-session and misaddressed ones once read; all are
// counted, never answered; wire.go tells how epochs keep replays out
// across restarts. Answers go to the address the peer list gives
// for the sender's rank, not to the datagram's source, so that a forged source
// cannot aim answers at a third party.
//
// Timestamps are readings of the Endpoint's clock (by default
// CLOCK_MONOTONIC_RAW). Where the kernel gives software receive timestamps
// (SO_TIMESTAMPING, parsed by sockts), a datagram's arrival is the clock
// reading after the read minus the time the datagram waited for it, measured
// in CLOCK_REALTIME from the kernel's stamp: the wake-up latency of the
// reading goroutine, the largest noise of a user-space stamp, drops out, and
// the rate difference of the two clocks over that wait (≤ 500 ppm of a few
// tens of µs) is far below a nanosecond. Without kernel stamps the arrival
// is the reading after the read. A requester stamps Send just before
// encoding the ping (the stamp is inside the MAC) and Recv at the pong's
// arrival; a responder answers with the midpoint of the ping's arrival and
// its clock just before encoding the pong. Both directions thus run from a
// user-space stamp before a send to an arrival stamp, so they are alike and
// the midpoint cancels the responder's processing time.

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
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

// minKeyLen is the shortest key LoadKey and Listen accept: HMAC-SHA256's
// block-sized security needs at least the 32 bytes of its output.
const minKeyLen = 32

// DefaultPingTimeout is how long Ping waits for its pong when the
// EndpointConfig names no timeout.
const DefaultPingTimeout = 200 * time.Millisecond

// maxRuns is how many runs (exchanges a driver asked this node to make) an
// Endpoint carries out at once; more are dropped and counted as busy.
const maxRuns = 64

// Key is a cluster key. It formats as "[key redacted]" with every fmt verb,
// so that a logged config or error does not show it.
type Key []byte

// Format implements fmt.Formatter.
func (Key) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[key redacted]")) }

// LoadKey reads a key file: its contents with surrounding whitespace trimmed,
// used as raw bytes (a hex or base64 text is used as its text). It needs at
// least minKeyLen bytes. Errors name the file, never its contents.
func LoadKey(path string) (Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hca: key file: %w", err)
	}
	key := bytes.TrimSpace(b)
	if len(key) < minKeyLen {
		clear(b)
		return nil, fmt.Errorf("hca: key file %s: %d bytes after trimming whitespace, want at least %d", path, len(key), minKeyLen)
	}
	out := bytes.Clone(key)
	clear(b)
	return out, nil
}

// CheckKeyFile checks a key file as LoadKey reads it, and that only its
// owner may read it.
func CheckKeyFile(path string) error {
	key, err := LoadKey(path)
	if err != nil {
		return err
	}
	clear(key)
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s: mode %04o lets others read the cluster key; make it 0600", path, fi.Mode().Perm())
	}
	return nil
}

// EndpointConfig describes an Endpoint.
type EndpointConfig struct {
	Addr    string                 // UDP address to bind, e.g. "0.0.0.0:7400" or "127.0.0.1:0"
	Rank    int                    // this agent's rank, 0..math.MaxInt32
	Key     Key                    // cluster key, at least minKeyLen bytes (LoadKey)
	Peers   map[int]netip.AddrPort // rank → address; more with SetPeer
	Session uint64                 // the cluster's session; change with setSession
	// Clock reads this node's clock in ns; nil is CLOCK_MONOTONIC_RAW.
	Clock func() int64
	// Timeout bounds each Ping; zero is DefaultPingTimeout. A run waits
	// three times as long, a SendModel as long.
	Timeout time.Duration
	// OnModel, if set, receives the models a peer sends this node
	// (SendModel), with the sender's rank and round, on Serve's goroutine:
	// it must not block. The model-ack is sent after it returns. It gets
	// only models newer than the last it got from the sender's epoch
	// (wire.go): a retransmission of that round is acknowledged without
	// it, an older round refused and counted (DroppedStaleModel).
	OnModel func(from int, round int64, m timebase.LinearModel)
	// AnswerDelay, for experiments on one host, makes every ping-pong of
	// this endpoint's take about this long more: a ping waits half of it
	// before its send stamp is taken, and a pong is held the other half
	// before it is answered. On loopback a ping-pong otherwise costs mostly
	// CPU, so pairs meant to run concurrently cannot overlap on a machine
	// with fewer cores than agents; with the delay they wait side by side.
	// Both legs of an exchange start after an idle spell, so that the
	// slower cold path (caches, an idle vCPU) costs both alike: holding
	// only the answer skewed offsets by ~10 µs here. The pong's reading
	// stays the midpoint of the ping's arrival and the pong's departure.
	// Zero in production.
	AnswerDelay time.Duration
}

// EndpointStats counts an Endpoint's datagrams. Every datagram read is
// Received and then either answered (a ping), delivered to its Ping (a pong),
// or counted under exactly one of the Dropped counters.
type EndpointStats struct {
	Sent                   uint64 // pings and pongs written (SendErrors of them failed)
	Received               uint64 // datagrams read
	Answered               uint64 // pings answered with a pong (written, maybe failed)
	Runs                   uint64 // runs carried out (each answered with a report)
	Models                 uint64 // models received (each answered with a model-ack)
	Matched                uint64 // answers (pongs, reports, model-acks) delivered to their waiting request
	DroppedUnauthenticated uint64 // bad MAC: wrong key or tampered
	DroppedReplayed        uint64 // sequence number seen before or too old, or from a retired epoch of the sender (a capture replayed after it restarted)
	DroppedStaleEpoch      uint64 // run or model not naming this endpoint's epoch: made for an earlier start of it (a replay), or sent before the sender learnt of its restart
	DroppedStaleModel      uint64 // model of a round older than the last taken from the sender's epoch
	DroppedForeignSession  uint64 // authenticated, another session
	DroppedMalformed       uint64 // short, long, bad magic, unknown version or type
	DroppedMisaddressed    uint64 // authenticated, but for another rank or from a rank not in the peer list
	DroppedUnknownSource   uint64 // from a source address (IP and port) that is no peer's: dropped unread, before its MAC is checked
	DroppedUnmatched       uint64 // authenticated answer no request waits for (late, after its timeout, or to an earlier start)
	DroppedBusy            uint64 // runs refused: maxRuns already under way
	KernelStamped          uint64 // datagrams read with a kernel receive timestamp
	Lost                   uint64 // Pings, Runs and SendModels that timed out, and runs reported lost
	SendErrors             uint64 // writes that failed
	PeerRestarts           uint64 // peers heard from in a new epoch after an earlier one: restarts
}

type counters struct {
	sent, received, answered, runs, models, matched             atomic.Uint64
	unauth, replayed, foreign, malformed, misaddressed, unmatch atomic.Uint64
	busy, lost, sendErrors, kernelStamped                       atomic.Uint64
	staleEpoch, staleModel, restarts, unknownSource             atomic.Uint64
}

// Endpoint is one agent's HCA socket. Serve must run for Ping to get answers
// (pongs arrive on the same socket). Methods are safe for concurrent use.
type Endpoint struct {
	conn    *net.UDPConn
	rank    uint32
	epoch   uint64 // this start's nonce (wire.go)
	key     []byte
	clock   func() int64
	timeout time.Duration
	onModel func(int, int64, timebase.LinearModel)
	delay   time.Duration // AnswerDelay
	seq     atomic.Uint64
	serving atomic.Bool
	running atomic.Int32 // runs under way
	rxStamp bool         // the kernel stamps arrivals
	c       counters

	sendMu  sync.Mutex // guards txCodec and txBuf
	txCodec *codec
	txBuf   []byte

	mu      sync.Mutex // guards what follows
	session uint64
	peers   map[uint32]netip.AddrPort
	sources map[netip.AddrPort]int // the peers' addresses (unmapped): how many ranks have each
	waiters map[uint64]*waiter
	known   map[uint32]*peerState
}

// Listen binds cfg.Addr and returns an Endpoint that owns the socket.
func Listen(cfg EndpointConfig) (*Endpoint, error) {
	if cfg.Rank < 0 || cfg.Rank > math.MaxInt32 {
		return nil, fmt.Errorf("hca endpoint: rank %d out of range 0..%d", cfg.Rank, math.MaxInt32)
	}
	if len(cfg.Key) < minKeyLen {
		return nil, fmt.Errorf("hca endpoint: key of %d bytes, want at least %d", len(cfg.Key), minKeyLen)
	}
	if cfg.Clock == nil {
		if _, err := timebase.MonotonicRaw.Now(); err != nil {
			return nil, fmt.Errorf("hca endpoint: CLOCK_MONOTONIC_RAW: %w", err)
		}
		cfg.Clock = func() int64 { t := timebase.MonotonicRawNS(); return t }
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
		rxStamp: enableRxStamps(conn),
		rank:    uint32(cfg.Rank),
		epoch:   newEpoch(),
		key:     bytes.Clone(cfg.Key),
		clock:   cfg.Clock,
		timeout: cfg.Timeout,
		onModel: cfg.OnModel,
		delay:   cfg.AnswerDelay,
		txCodec: newCodec(cfg.Key),
		txBuf:   make([]byte, 0, maxMessageLen),
		session: cfg.Session,
		peers:   make(map[uint32]netip.AddrPort),
		sources: make(map[netip.AddrPort]int),
		waiters: make(map[uint64]*waiter),
		known:   make(map[uint32]*peerState),
	}
	for r, a := range cfg.Peers {
		if err := e.SetPeer(r, a); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return e, nil
}

// newEpoch draws a start nonce: 64 random bits, never 0 (which stands for
// an epoch not known).
func newEpoch() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand.Read's contract)
		if ep := binary.BigEndian.Uint64(b[:]); ep != 0 {
			return ep
		}
	}
}

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
	if old, ok := e.peers[uint32(rank)]; ok {
		if k := unmapped(old); e.sources[k] > 1 {
			e.sources[k]--
		} else {
			delete(e.sources, k)
		}
	}
	e.peers[uint32(rank)] = addr
	e.sources[unmapped(addr)]++
	e.mu.Unlock()
	return nil
}

// unmapped is a with an IPv4-mapped IPv6 address as plain IPv4: a dual-stack
// socket reads IPv4 sources as ::ffff:a.b.c.d.
func unmapped(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}

// fromPeer reports whether src, a datagram's source, is a peer's address.
func (e *Endpoint) fromPeer(src netip.AddrPort) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sources[unmapped(src)] > 0
}

// setSession changes the cluster's session: datagrams of other sessions
// are dropped from now on. What the endpoint knows of its peers' epochs
// stays: their sequence numbers go on.
func (e *Endpoint) setSession(id uint64) {
	e.mu.Lock()
	e.session = id
	e.mu.Unlock()
}

// Stats returns the counters.
func (e *Endpoint) Stats() EndpointStats {
	c := &e.c
	return EndpointStats{
		Sent: c.sent.Load(), Received: c.received.Load(), Answered: c.answered.Load(),
		Runs: c.runs.Load(), Models: c.models.Load(), Matched: c.matched.Load(),
		DroppedUnauthenticated: c.unauth.Load(), DroppedReplayed: c.replayed.Load(),
		DroppedStaleEpoch: c.staleEpoch.Load(), DroppedStaleModel: c.staleModel.Load(),
		DroppedForeignSession: c.foreign.Load(), DroppedMalformed: c.malformed.Load(),
		DroppedMisaddressed: c.misaddressed.Load(), DroppedUnknownSource: c.unknownSource.Load(), DroppedUnmatched: c.unmatch.Load(), DroppedBusy: c.busy.Load(), KernelStamped: c.kernelStamped.Load(),
		Lost: c.lost.Load(), SendErrors: c.sendErrors.Load(), PeerRestarts: c.restarts.Load(),
	}
}

// Close closes the socket; a running Serve returns.
func (e *Endpoint) Close() error {
	if err := e.conn.Close(); err != nil {
		return fmt.Errorf("hca endpoint %d: close: %w", e.rank, err)
	}
	return nil
}
