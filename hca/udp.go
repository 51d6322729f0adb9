package hca

// The authenticated UDP transport between agents.
//
// An Endpoint is one agent's socket: it answers pings addressed to its rank
// (Serve) and runs ping-pongs to its peers (Ping). Every datagram carries an
// HMAC-SHA256 with the cluster key (wire.go); unauthenticated, malformed,
// replayed, foreign-session and misaddressed datagrams are dropped and
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
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// MinKeyLen is the shortest key LoadKey and Listen accept: HMAC-SHA256's
// block-sized security needs at least the 32 bytes of its output.
const MinKeyLen = 32

// DefaultPingTimeout is how long Ping waits for its pong when the
// EndpointConfig names no timeout.
const DefaultPingTimeout = 200 * time.Millisecond

// MaxRuns is how many runs (exchanges a driver asked this node to make) an
// Endpoint carries out at once; more are dropped and counted as busy.
const MaxRuns = 64

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
	Session uint64                 // the cluster's session; change with SetSession
	// Clock reads this node's clock in ns; nil is CLOCK_MONOTONIC_RAW.
	Clock func() int64
	// Timeout bounds each Ping; zero is DefaultPingTimeout. A Run waits
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
	DroppedUnmatched       uint64 // authenticated answer no request waits for (late, after its timeout, or to an earlier start)
	DroppedBusy            uint64 // runs refused: MaxRuns already under way
	KernelStamped          uint64 // datagrams read with a kernel receive timestamp
	Lost                   uint64 // Pings, Runs and SendModels that timed out, and runs reported lost
	SendErrors             uint64 // writes that failed
	PeerRestarts           uint64 // peers heard from in a new epoch after an earlier one: restarts
}

type counters struct {
	sent, received, answered, runs, models, matched             atomic.Uint64
	unauth, replayed, foreign, malformed, misaddressed, unmatch atomic.Uint64
	busy, lost, sendErrors, kernelStamped                       atomic.Uint64
	staleEpoch, staleModel, restarts                            atomic.Uint64
}

// retiredEpochs is how many of a peer's earlier epochs an Endpoint
// remembers (and refuses) besides its current one.
const retiredEpochs = 16

// peerState is what an Endpoint knows of one peer (wire.go): its current
// epoch (0 until a fresh message names it), the epochs it left, a window
// over the current epoch's requests, one over the answers to this
// endpoint's requests (its own sequence numbers, unique in its epoch), the
// last model round taken from the current epoch, and the epoch of pings
// that did not name this endpoint's (tentative), with their window.
type peerState struct {
	epoch        uint64
	retired      [retiredEpochs]uint64
	nextRetire   int
	requests     ReplayWindow
	answers      ReplayWindow
	modelRound   int64
	hasModel     bool
	tentative    uint64
	tentativeWin ReplayWindow
	probe        bool // a run or model to it went unanswered: ping before the next
}

// isRetired reports whether ep is an epoch the peer left.
func (p *peerState) isRetired(ep uint64) bool {
	for _, r := range p.retired {
		if r == ep && r != 0 {
			return true
		}
	}
	return false
}

// adopt takes ep as the peer's current epoch, retiring the one before; it
// reports whether there was one (the peer restarted).
func (p *peerState) adopt(ep uint64) bool {
	restarted := p.epoch != 0
	if restarted {
		p.retired[p.nextRetire] = p.epoch
		p.nextRetire = (p.nextRetire + 1) % retiredEpochs
	}
	p.epoch = ep
	p.requests.Reset()
	if ep == p.tentative { // its pings answered so far stay answered
		p.requests = p.tentativeWin
	}
	p.tentative = 0
	p.modelRound, p.hasModel = 0, false
	return restarted
}

// waiter is a request waiting for its answer.
type waiter struct {
	req  Message      // the request as sent
	ch   chan Message // the answer; recv is set before it is sent
	recv int64        // the local clock when the answer was read
}

// answers reports whether a is the answer to w's request: the right type,
// from the rank asked, echoing what the request carried.
func (w *waiter) answers(a Message) bool {
	r := w.req
	if a.From != r.To {
		return false
	}
	switch r.Type {
	case MsgPing:
		return a.Type == MsgPong && a.Send == r.Send
	case MsgRun:
		return a.Type == MsgReport && a.Target == r.Target
	case MsgModel:
		return a.Type == MsgModelAck && a.Send == r.Send
	}
	return false
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
	txCodec *Codec
	txBuf   []byte

	mu      sync.Mutex // guards what follows
	session uint64
	peers   map[uint32]netip.AddrPort
	waiters map[uint64]*waiter
	known   map[uint32]*peerState
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
		rxStamp: enableRxStamps(conn),
		rank:    uint32(cfg.Rank),
		epoch:   newEpoch(),
		key:     bytes.Clone(cfg.Key),
		clock:   cfg.Clock,
		timeout: cfg.Timeout,
		onModel: cfg.OnModel,
		delay:   cfg.AnswerDelay,
		txCodec: NewCodec(cfg.Key),
		txBuf:   make([]byte, 0, MaxMessageLen),
		session: cfg.Session,
		peers:   make(map[uint32]netip.AddrPort),
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

// Rank is this endpoint's rank.
func (e *Endpoint) Rank() int { return int(e.rank) }

// Epoch is this endpoint's start nonce: its requests are numbered from 1
// in it, and peers take its answers and its runs and models only when
// they name it.
func (e *Endpoint) Epoch() uint64 { return e.epoch }

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

// SetSession changes the cluster's session: datagrams of other sessions
// are dropped from now on. What the endpoint knows of its peers' epochs
// stays: their sequence numbers go on.
func (e *Endpoint) SetSession(id uint64) {
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
		DroppedMisaddressed: c.misaddressed.Load(), DroppedUnmatched: c.unmatch.Load(), DroppedBusy: c.busy.Load(), KernelStamped: c.kernelStamped.Load(),
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

// Ping runs one ping-pong with rank to: it sends a ping and waits for the
// matching pong (same session, sequence number, ranks and echoed send stamp)
// up to the Endpoint's timeout, after which the error wraps ErrLost. Serve
// must be running.
func (e *Endpoint) Ping(ctx context.Context, to int) (Exchange, error) {
	a, recv, err := e.request(ctx, Message{Type: MsgPing, To: uint32(to)}, e.timeout)
	if err != nil {
		return Exchange{}, err
	}
	return Exchange{From: int(e.rank), To: to, Send: a.Send, Remote: a.Remote, Recv: recv}, nil
}

// PingBurst runs up to n back-to-back ping-pongs with rank to and returns
// the one with the shortest round trip: the first of a burst wakes the
// path (scheduler, caches), which delays and skews it; the later ones run
// warm. It fails only when every ping is lost.
func (e *Endpoint) PingBurst(ctx context.Context, to, n int) (Exchange, error) {
	var best Exchange
	var err error
	got := false
	for range max(n, 1) {
		x, perr := e.Ping(ctx, to)
		if perr != nil {
			err = perr
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !got || x.RTT() < best.RTT() {
			best, got = x, true
		}
	}
	if !got {
		return Exchange{}, err
	}
	return best, nil
}

// Run asks rank from to run a burst of ping-pongs with rank to (PingBurst)
// and report the best: how a driver makes two other nodes exchange. The
// Exchange's stamps are from's and to's clocks. A burst that from reports
// lost, and a report that does not come within burst+2 ping timeouts, are
// errors wrapping ErrLost. from must be a peer; to must be one of from's.
// A run names from's epoch: when it is not known (or from's last run or
// model went unanswered), from is pinged first to learn it.
func (e *Endpoint) Run(ctx context.Context, from, to, burst int) (Exchange, error) {
	if to < 0 || to > math.MaxInt32 || burst < 0 || burst > MaxBurst {
		return Exchange{}, fmt.Errorf("hca endpoint %d: run %d->%d burst %d: rank or burst out of range", e.rank, from, to, burst)
	}
	wait := time.Duration(max(burst, 1)+2) * e.timeout
	a, _, err := e.request(ctx, Message{Type: MsgRun, To: uint32(from), Target: uint32(to), Burst: uint32(burst)}, wait)
	if err != nil {
		return Exchange{}, err
	}
	if a.Lost {
		e.c.lost.Add(1)
		return Exchange{}, fmt.Errorf("hca endpoint %d: run %d->%d: rank %d got no answer: %w", e.rank, from, to, from, ErrLost)
	}
	return Exchange{From: from, To: to, Send: a.Send, Remote: a.Remote, Recv: a.Recv}, nil
}

// SendModel gives rank to its clock model m of sync round round and waits
// for the acknowledgement up to the ping timeout (an error wrapping ErrLost
// after that; callers retry). Like a run, it learns to's epoch with a ping
// first when it has to. Rounds must grow within this endpoint's epoch: the
// receiver refuses an older one and takes the same one again only once.
func (e *Endpoint) SendModel(ctx context.Context, to int, round int64, m timebase.LinearModel) error {
	if err := checkModel(m, int64(m.N)); err != nil {
		return fmt.Errorf("hca endpoint %d: model for rank %d: %v", e.rank, to, err)
	}
	_, _, err := e.request(ctx, Message{Type: MsgModel, To: uint32(to), Send: round, Model: m}, e.timeout)
	return err
}

// request sends req (its type, To and type-specific fields set) with a new
// sequence number in this endpoint's epoch, naming the receiver's epoch as
// far as it is known, and waits up to timeout for its
// answer, returned with the local clock when it was read. A ping's send
// stamp is taken here, just before it is encoded.
func (e *Endpoint) request(ctx context.Context, req Message, timeout time.Duration) (Message, int64, error) {
	to := req.To
	if to > math.MaxInt32 {
		return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: out of range", e.rank, req.Type, to)
	}
	if req.Type != MsgPing && e.mustProbe(to) {
		// A run or a model must name the receiver's epoch: a ping's
		// answer tells it (after this endpoint's start, or the peer's).
		if _, _, err := e.request(ctx, Message{Type: MsgPing, To: to}, e.timeout); err != nil {
			return Message{}, 0, err
		}
	}
	e.mu.Lock()
	addr, ok := e.peers[to]
	req.Session = e.session
	if st := e.known[to]; st != nil {
		req.PeerEpoch = st.epoch
	}
	e.mu.Unlock()
	if !ok {
		return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: not a peer", e.rank, req.Type, to)
	}
	req.From, req.Epoch = e.rank, e.epoch
	req.Seq = e.seq.Add(1)
	w := &waiter{ch: make(chan Message, 1)}
	if req.Type == MsgPing && e.delay > 0 {
		if err := sleepCtx(ctx, e.delay/2); err != nil {
			return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: %w", e.rank, req.Type, to, err)
		}
	}

	e.sendMu.Lock()
	if req.Type == MsgPing {
		req.Send = e.clock()
	}
	w.req = req
	e.mu.Lock()
	e.waiters[req.Seq] = w
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiters, req.Seq)
		e.mu.Unlock()
	}()
	err := e.sendLocked(req, addr)
	e.sendMu.Unlock()
	if err != nil {
		return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d at %s: %w", e.rank, req.Type, to, addr, err)
	}

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-w.ch:
		return a, w.recv, nil
	case <-t.C:
		e.c.lost.Add(1)
		if req.Type != MsgPing {
			e.setProbe(to) // the receiver may have restarted
		}
		return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d seq %d: no answer in %v: %w", e.rank, req.Type, to, req.Seq, timeout, ErrLost)
	case <-ctx.Done():
		return Message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d seq %d: %w", e.rank, req.Type, to, req.Seq, ctx.Err())
	}
}

// mustProbe reports whether a run or model to rank to needs a ping first:
// its epoch is not known, or a run or model went unanswered since the last
// answer from it.
func (e *Endpoint) mustProbe(to uint32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.known[to]
	return st == nil || st.epoch == 0 || st.probe
}

func (e *Endpoint) setProbe(to uint32) {
	e.mu.Lock()
	if st := e.known[to]; st != nil {
		st.probe = true
	}
	e.mu.Unlock()
}

// send encodes m and writes it to addr (a failure is counted).
func (e *Endpoint) send(m Message, addr netip.AddrPort) {
	e.sendMu.Lock()
	_ = e.sendLocked(m, addr)
	e.sendMu.Unlock()
}

// sendLocked encodes m into the shared transmit buffer and writes it to
// addr, counting the message and a failed write. sendMu must be held.
func (e *Endpoint) sendLocked(m Message, addr netip.AddrPort) error {
	e.txBuf = e.txCodec.Append(e.txBuf[:0], m)
	e.c.sent.Add(1)
	_, err := e.conn.WriteToUDPAddrPort(e.txBuf, addr)
	if err != nil {
		e.c.sendErrors.Add(1)
	}
	return err
}

// Serve reads the socket until ctx ends (it then returns ctx's error) or the
// socket is closed: it answers pings and models, carries out runs (each on
// its own goroutine, at most MaxRuns at once, ended with ctx), and hands
// answers to their requests. Only one Serve may run at a time. It closes
// nothing; Close is the owner's.
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
	var runs sync.WaitGroup
	defer runs.Wait()

	codec := NewCodec(e.key)
	buf := make([]byte, 2048) // more than MaxMessageLen, so that long datagrams show
	out := make([]byte, 0, MaxMessageLen)
	oob := make([]byte, 256)
	var ctl sockts.Control
	layout := sockts.NativeLayout()
	for {
		n, oobn, _, _, err := e.conn.ReadMsgUDPAddrPort(buf, oob)
		now := e.clock()
		if err == nil && e.rxStamp && layout.Parse(oob[:oobn], &ctl) == nil && ctl.Software != 0 {
			if c, rt, ok := e.pairedRealtime(); ok {
				if wait := rt - ctl.Software; wait >= 0 && wait < int64(time.Second) {
					now = c - wait
					e.c.kernelStamped.Add(1)
				}
			}
		}
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
		m, ok := e.accept(codec, buf[:n])
		if !ok {
			continue
		}
		switch m.Type {
		case MsgPong, MsgReport, MsgModelAck:
			e.deliver(m, now)
		case MsgPing:
			if e.delay > 0 {
				e.delayedPong(ctx, &runs, m, now)
				continue
			}
			out = e.pong(codec, m, now, out)
		case MsgModel:
			take, ok := e.modelOrder(m)
			if !ok {
				continue
			}
			if take && e.onModel != nil {
				e.onModel(int(m.From), m.Send, m.Model)
			}
			e.c.models.Add(1)
			out = codec.Append(out[:0], e.answer(MsgModelAck, m))
			e.reply(out, m.From)
		case MsgRun:
			e.startRun(ctx, &runs, m)
		}
	}
}

// maxPairNS bounds the REALTIME interval around a reading of the
// endpoint's clock for the two to count as simultaneous.
const maxPairNS = 2_000

// pairedRealtime reads the endpoint's clock between two REALTIME readings
// and returns it with their midpoint, so that a kernel stamp (REALTIME) can
// be carried to the endpoint's clock. A pair whose readings lie more than
// maxPairNS apart (the goroutine was preempted between them) is read again,
// up to three times; ok is false when none was tight.
func (e *Endpoint) pairedRealtime() (clock, rt int64, ok bool) {
	for range 3 {
		r1, err := timebase.Realtime.Now()
		c := e.clock()
		r2, err2 := timebase.Realtime.Now()
		if err != nil || err2 != nil {
			return 0, 0, false
		}
		if r2-r1 <= maxPairNS {
			return c, r1 + (r2-r1)/2, true
		}
	}
	return 0, 0, false
}

// answer is the answer of type t to request m: from this endpoint's
// epoch, echoing m's epoch and sequence number.
func (e *Endpoint) answer(t MsgType, m Message) Message {
	return Message{Type: t, Session: m.Session, Epoch: e.epoch, PeerEpoch: m.Epoch, From: e.rank, To: m.From, Seq: m.Seq, Send: m.Send}
}

// modelOrder decides on a model that accept let through: take it (newer
// than the last taken from its sender's epoch), acknowledge it only (that
// round again: a retransmission after a lost model-ack), or refuse it
// (ok false, counted: an older round).
func (e *Endpoint) modelOrder(m Message) (take, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.known[m.From] // accept made it, in m's epoch
	switch {
	case !st.hasModel || m.Send > st.modelRound:
		st.modelRound, st.hasModel = m.Send, true
		return true, true
	case m.Send == st.modelRound:
		return false, true
	}
	e.c.staleModel.Add(1)
	return false, false
}

// accept authenticates and checks one datagram: the session, the ranks, the
// epochs and the replay window (wire.go). Whatever fails is counted under
// one drop counter.
func (e *Endpoint) accept(codec *Codec, b []byte) (Message, bool) {
	m, err := codec.Decode(b)
	switch {
	case errors.Is(err, ErrBadMAC):
		e.c.unauth.Add(1)
		return m, false
	case err != nil:
		e.c.malformed.Add(1)
		return m, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.Session != e.session {
		e.c.foreign.Add(1)
		return m, false
	}
	if _, known := e.peers[m.From]; m.To != e.rank || !known {
		e.c.misaddressed.Add(1)
		return m, false
	}
	st := e.known[m.From]
	if st == nil {
		st = new(peerState)
		e.known[m.From] = st
	}
	fresh := m.PeerEpoch == e.epoch // made after this endpoint started
	switch {
	case m.Type.IsAnswer() && !fresh:
		e.c.unmatch.Add(1) // to a request of an earlier start
		return m, false
	case m.Epoch != st.epoch && st.isRetired(m.Epoch):
		e.c.replayed.Add(1)
		return m, false
	case (m.Type == MsgRun || m.Type == MsgModel) && !fresh:
		e.c.staleEpoch.Add(1)
		return m, false
	case m.Epoch != st.epoch && fresh:
		if st.adopt(m.Epoch) {
			e.c.restarts.Add(1)
		}
	}
	win := &st.requests
	switch {
	case m.Type.IsAnswer():
		win = &st.answers
	case m.Epoch != st.epoch:
		// A ping from a start of the peer not heard from yet that does
		// not name this one: answered, nothing learnt (wire.go), but not
		// twice.
		if st.tentative != m.Epoch {
			st.tentative = m.Epoch
			st.tentativeWin.Reset()
		}
		win = &st.tentativeWin
	}
	if !win.Accept(m.Seq) {
		e.c.replayed.Add(1)
		return m, false
	}
	if m.Type.IsAnswer() {
		st.probe = false
	}
	return m, true
}

// deliver hands an answer read at now to the request waiting for it.
func (e *Endpoint) deliver(m Message, now int64) {
	e.mu.Lock()
	w := e.waiters[m.Seq]
	if w == nil || !w.answers(m) {
		e.mu.Unlock()
		e.c.unmatch.Add(1)
		return
	}
	delete(e.waiters, m.Seq)
	e.mu.Unlock()
	w.recv = now
	e.c.matched.Add(1)
	w.ch <- m // buffered, and only ever sent once: the waiter is gone from the map
}

// pong answers a ping read at now with the midpoint of arrival and
// departure.
func (e *Endpoint) pong(codec *Codec, m Message, now int64, out []byte) []byte {
	before := e.clock()
	a := e.answer(MsgPong, m)
	a.Remote = now + (before-now)/2
	out = codec.Append(out[:0], a)
	// Counted before the write, so that the count is up when the pong lands.
	e.c.answered.Add(1)
	e.reply(out, m.From)
	return out
}

// delayedPong answers m after the responder's half of the endpoint's
// AnswerDelay, on a goroutine of its own (with its own Codec), so that
// Serve goes on reading meanwhile.
func (e *Endpoint) delayedPong(ctx context.Context, wg *sync.WaitGroup, m Message, now int64) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if sleepCtx(ctx, e.delay-e.delay/2) == nil {
			// After an idle spell the answer path runs cold, and only the
			// answer's leg of the exchange would pay for it (the reading is
			// taken before the encoding and the write): one encoding first,
			// thrown away, warms it.
			c := NewCodec(e.key)
			out := c.Append(make([]byte, 0, MaxMessageLen), e.answer(MsgPong, m))
			e.pong(c, m, now, out)
		}
	}()
}

// sleepCtx waits d or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reply writes an encoded answer to rank's address from the peer list (not
// the datagram's source, which a forger chooses).
func (e *Endpoint) reply(b []byte, rank uint32) {
	e.mu.Lock()
	addr, ok := e.peers[rank]
	e.mu.Unlock()
	if !ok {
		return
	}
	e.c.sent.Add(1)
	if _, err := e.conn.WriteToUDPAddrPort(b, addr); err != nil {
		e.c.sendErrors.Add(1)
	}
}

// startRun carries out a run on its own goroutine and reports it to the
// requester. A run whose target is not a peer, or that would exceed
// MaxRuns, is dropped and counted; its driver times out.
func (e *Endpoint) startRun(ctx context.Context, runs *sync.WaitGroup, m Message) {
	e.mu.Lock()
	_, known := e.peers[m.Target]
	addr := e.peers[m.From]
	e.mu.Unlock()
	if !known {
		e.c.misaddressed.Add(1)
		return
	}
	if e.running.Add(1) > MaxRuns {
		e.running.Add(-1)
		e.c.busy.Add(1)
		return
	}
	e.c.runs.Add(1)
	runs.Add(1)
	go func() {
		defer runs.Done()
		defer e.running.Add(-1)
		r := e.answer(MsgReport, m)
		r.Send, r.Target = 0, m.Target
		x, err := e.PingBurst(ctx, int(m.Target), int(m.Burst))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.Lost = true
		} else {
			r.Send, r.Remote, r.Recv = x.Send, x.Remote, x.Recv
		}
		e.send(r, addr)
	}()
}

// PeerNetwork is the Network an agent's algorithm harness sees on the node
// that drives a synchronisation: exchanges from the local rank run over its
// Endpoint (Ping); exchanges between two other ranks are run by the first of
// them at the driver's request (Run), so every algorithm runs on it. It
// implements Paralleler: the exchanges of disjoint pairs run concurrently.
type PeerNetwork struct {
	ep    *Endpoint
	size  int
	burst int
}

// DefaultBurst is how many back-to-back ping-pongs a PeerNetwork's
// exchange is the best of.
const DefaultBurst = 3

// NewPeerNetwork returns the Network of p ranks driven by ep. ep's Serve must
// run while it is used, and so must the other ranks'.
func NewPeerNetwork(ep *Endpoint, p int) (*PeerNetwork, error) {
	if p < 1 || ep.Rank() >= p {
		return nil, fmt.Errorf("hca peer network: %d ranks, local rank %d", p, ep.Rank())
	}
	return &PeerNetwork{ep: ep, size: p, burst: DefaultBurst}, nil
}

// Size implements Network.
func (n *PeerNetwork) Size() int { return n.size }

// SetBurst makes each exchange the best of b back-to-back ping-pongs
// (1..MaxBurst; DefaultBurst at first).
func (n *PeerNetwork) SetBurst(b int) error {
	if b < 1 || b > MaxBurst {
		return fmt.Errorf("hca peer network: burst %d: want 1..%d", b, MaxBurst)
	}
	n.burst = b
	return nil
}

// Exchange implements Network.
func (n *PeerNetwork) Exchange(ctx context.Context, from, to int) (Exchange, error) {
	if from < 0 || from >= n.size || to < 0 || to >= n.size || from == to {
		return Exchange{}, fmt.Errorf("hca peer network: exchange %d->%d: ranks must differ and lie in 0..%d", from, to, n.size-1)
	}
	if from == n.ep.Rank() {
		return n.ep.PingBurst(ctx, to, n.burst)
	}
	return n.ep.Run(ctx, from, to, n.burst)
}

// Parallel implements Paralleler: f(0..k-1) run on their own goroutines;
// the first error cancels the others' context and is returned.
func (n *PeerNetwork) Parallel(ctx context.Context, k int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}
