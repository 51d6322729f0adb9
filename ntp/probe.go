package ntp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// Conn is the timestamping socket a probe uses (sockts.Conn; fakes in tests).
type Conn interface {
	WriteTo(b []byte, to netip.AddrPort) (sockts.Timestamp, error)
	ReadFrom(b []byte, timeout time.Duration) (int, netip.AddrPort, sockts.Timestamp, error)
}

// ProbeConfig configures probing one server.
type ProbeConfig struct {
	Server       netip.AddrPort
	Burst        int           // requests per poll; the minimum-delay sample is kept (default 1)
	BurstSpacing time.Duration // between requests of a burst (default 2 s, chrony's burst spacing)
	Timeout      time.Duration // wait for each reply (default 1 s)
	// NoWarmUp turns off the warm-up datagram sent just before each request
	// (see warmUp).
	NoWarmUp bool
	// Basic turns interleaved mode off. In interleaved mode (the default) each
	// request asks the server for the kernel transmit timestamp of its previous
	// reply, which completes the previous exchange with an accurate T3 (chronyd
	// serves this to any client; other servers answer in basic mode, which the
	// probe then uses).
	Basic bool
	// MaxDelayDevRatio is the delay test's ratio (see DelayTest; default 10,
	// negative turns it off).
	MaxDelayDevRatio float64
	// ToRealtime moves a hardware timestamp (the time of the NIC's PTP
	// hardware clock) to CLOCK_REALTIME; nil when the probe asks for no
	// hardware timestamps. Each of T1 and T4 is translated by its own source:
	// a hardware one through ToRealtime, a kernel software or user-space one is
	// REALTIME already. An exchange with a hardware stamp ToRealtime cannot
	// move is counted (Counters.Untranslated) and not used.
	ToRealtime func(phcNS int64) (int64, error)
}

// Sample is one exchange.
type Sample struct {
	// Client send, server receive, server send, client receive (Unix ns). T1
	// and T4 are CLOCK_REALTIME whatever their source (hardware stamps are
	// translated); T4 is the time of the sample's event.
	T1, T2, T3, T4 int64
	OffsetNS       int64 // local - server
	DelayNS        int64
	TxSource       sockts.Source
	RxSource       sockts.Source
	// Mixed: T1 and T4 come from different timestamp sources (e.g. a user-space
	// T1 when the NIC stamped only the reply), so the delay and offset carry
	// the difference between the two sources' errors.
	Mixed       bool
	Interleaved bool // T3 is the server's transmit timestamp of its reply, sent afterwards
	// DispersionNS is the sample's dispersion (RFC 5905 section 8): the server's
	// precision plus the frequency tolerance (15 ppm) over the round trip.
	DispersionNS int64
	// DelayOutlier: the delay rose far above the recent minimum (DelayTest);
	// the sample is reported but its offset is not to be trusted.
	DelayOutlier bool
	Header       Header
}

// Mode is how the exchange was made: "interleaved" (T3 from the server's
// next reply) or "basic".
func (s Sample) Mode() string {
	if s.Interleaved {
		return "interleaved"
	}
	return "basic"
}

// phi is RFC 5905's frequency tolerance, 15 ppm.
const phi = 15e-6

func dispersion(precision int8, t1, t4 int64) int64 {
	return int64(math.Ldexp(1e9, int(precision))) + int64(phi*float64(t4-t1))
}

// Result is one poll: every sample of the burst and the one kept.
type Result struct {
	Samples []Sample
	Best    int // index of the minimum-delay sample, -1 when none
	Errors  []error
}

// Counters of a probe; safe to read while it runs.
type Counters struct {
	Requests, Replies, Timeouts atomic.Uint64
	BytesSent, BytesReceived    atomic.Uint64 // Ethernet frame bytes (NTP + UDP + IP + Ethernet headers, no FCS)
	Rejects                     [numRejects]atomic.Uint64
	KissRate, KissDeny          atomic.Uint64
	Interleaved                 atomic.Uint64 // samples completed by an interleaved reply
	DelayOutliers               atomic.Uint64 // samples flagged by the delay test
	// Repeats: interleaved replies that carried the same transmit timestamp
	// as the basic reply before them (the server had no better one): the
	// exchange they complete was already a sample, so they add none.
	Repeats atomic.Uint64
	// Untranslated: exchanges with a hardware timestamp ToRealtime could not
	// move to REALTIME (no PHC model yet); not used.
	Untranslated atomic.Uint64
}

// Ethernet + IPv4 + UDP header bytes around an NTP packet on the wire (the
// reference study's 90-byte frames for 48-byte packets).
const (
	overheadV4 = 14 + 20 + 8
	overheadV6 = 14 + 40 + 8
)

// Prober polls one server.
type Prober struct {
	cfg  ProbeConfig
	conn Conn
	rng  *rand.Rand
	C    Counters
	req  [48]byte
	warm [1]byte
	buf  [1024]byte

	// Kiss-o'-Death state: the interval multiplier (RATE) and a hold-off (DENY/RSTR).
	rateFactor int
	holdUntil  time.Time

	prev  exchangeState // the last exchange, for interleaved mode
	delay DelayTest
}

// exchangeState is what an interleaved reply needs of the previous exchange.
type exchangeState struct {
	valid      bool
	t1, t2, t4 int64
	t3         int64  // the basic transmit timestamp of that reply (0 when interleaved)
	t2raw      uint64 // the server's receive timestamp as it sent it
	tx, rx     sockts.Source
}

// KoD back-offs.
const (
	maxRateFactor = 64
	denyHoldOff   = time.Hour
)

// NewProber returns a prober of cfg.Server over conn.
func NewProber(cfg ProbeConfig, conn Conn) *Prober {
	if cfg.Burst <= 0 {
		cfg.Burst = 1
	}
	if cfg.BurstSpacing <= 0 {
		cfg.BurstSpacing = 2 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	return &Prober{cfg: cfg, conn: conn, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())), rateFactor: 1,
		delay: DelayTest{Ratio: cfg.MaxDelayDevRatio}}
}

// Retarget points the prober at another address of its server (a name that
// resolves elsewhere now) over conn: the exchange state (interleaved mode,
// the delay test, kiss-o'-death back-offs) starts afresh; the counters go on.
func (p *Prober) Retarget(server netip.AddrPort, conn Conn) {
	p.cfg.Server, p.conn = server, conn
	p.prev = exchangeState{}
	p.delay = DelayTest{Ratio: p.cfg.MaxDelayDevRatio}
	p.rateFactor, p.holdUntil = 1, time.Time{}
}

// Server is the address the prober polls.
func (p *Prober) Server() netip.AddrPort { return p.cfg.Server }

// RateFactor is how much a RATE kiss has stretched the poll interval (1 = none).
func (p *Prober) RateFactor() int { return p.rateFactor }

// ErrHeldOff is returned while the server has told us to go away (DENY, RSTR).
var ErrHeldOff = errors.New("server denied access (kiss-o'-death); holding off")

// Poll runs one burst.
func (p *Prober) Poll(ctx context.Context) (Result, error) {
	if time.Now().Before(p.holdUntil) {
		return Result{Best: -1}, fmt.Errorf("ntp %s: %w until %s", p.cfg.Server, ErrHeldOff, p.holdUntil.Format(time.RFC3339))
	}
	res := Result{Best: -1}
burst:
	for i := 0; i < p.cfg.Burst; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				// Stopped mid-burst: the samples taken are results all the same.
				if res.Best < 0 {
					return res, ctx.Err()
				}
				break burst
			case <-time.After(p.cfg.BurstSpacing):
			}
		}
		s, err := p.exchange(ctx)
		if errors.Is(err, errRepeat) {
			continue // counted; not an error of the server's
		}
		if err != nil {
			res.Errors = append(res.Errors, err)
			if r := RejectOf(err); r == RejectKoD {
				break // do not keep knocking within the burst
			}
			continue
		}
		if s.DelayOutlier = p.delay.Check(s.DelayNS); s.DelayOutlier {
			p.C.DelayOutliers.Add(1)
		}
		res.Samples = append(res.Samples, s)
		if res.Best < 0 || s.DelayNS < res.Samples[res.Best].DelayNS {
			res.Best = len(res.Samples) - 1
		}
	}
	if res.Best < 0 {
		if len(res.Errors) == 0 {
			return res, fmt.Errorf("ntp %s: no new sample: every reply repeated an earlier one", p.cfg.Server)
		}
		return res, fmt.Errorf("ntp %s: no usable reply: %w", p.cfg.Server, errors.Join(res.Errors...))
	}
	if p.rateFactor > 1 && len(res.Errors) == 0 {
		p.rateFactor /= 2 // the server is content again: come back slowly
	}
	return res, nil
}

func (p *Prober) overhead() uint64 {
	if p.cfg.Server.Addr().Is4() || p.cfg.Server.Addr().Is4In6() {
		return overheadV4
	}
	return overheadV6
}

// cookie is the transmit timestamp of a request: the current time with the low
// 32 bits of the fraction (below 0.25 ns... 1 s/2^32) random, as chrony does.
func (p *Prober) cookie() uint64 {
	now := timebase.RealtimeNS()
	sec, frac := FromUnixNS(now)
	return uint64(sec)<<32 | uint64(frac&^0xffffff) | uint64(p.rng.Uint32()&0xffffff)
}

// errRepeat: the reply completed an exchange that was already a sample.
var errRepeat = errors.New("reply repeats the previous sample")

// realtime returns a timestamp in CLOCK_REALTIME, translating a hardware one.
func (p *Prober) realtime(ts sockts.Timestamp) (int64, error) {
	if ts.Source != sockts.SourceHardware {
		return ts.NS, nil // kernel software and user-space stamps are REALTIME
	}
	if p.cfg.ToRealtime == nil {
		return 0, fmt.Errorf("hardware timestamp %d and no translation to realtime", ts.NS)
	}
	return p.cfg.ToRealtime(ts.NS)
}

// waitSlice is the longest single wait for a reply: cancellation is seen
// within it (the socket has no other wake-up).
const waitSlice = 100 * time.Millisecond

// exchange sends one request and waits for its reply, up to the timeout and
// no longer than ctx.
func (p *Prober) exchange(ctx context.Context) (Sample, error) {
	cookie := p.cookie()
	var origin, xcookie uint64
	if !p.cfg.Basic && p.prev.valid {
		origin = p.prev.t2raw
		sec, frac := FromUnixNS(p.prev.t4)
		xcookie = uint64(sec)<<32 | uint64(frac&^0xffffff) | uint64(p.rng.Uint32()&0xffffff)
		if xcookie == cookie {
			xcookie ^= 1
		}
	}
	req, err := NewRequest(p.req[:0], cookie, origin, xcookie)
	if err != nil {
		return Sample{}, err
	}
	p.warmUp()
	tx, err := p.conn.WriteTo(req, p.cfg.Server)
	if err != nil {
		return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, err)
	}
	p.C.Requests.Add(1)
	p.C.BytesSent.Add(uint64(len(req)) + p.overhead())
	deadline := time.Now().Add(p.cfg.Timeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			p.C.Timeouts.Add(1)
			return Sample{}, fmt.Errorf("ntp %s: no reply within %v", p.cfg.Server, p.cfg.Timeout)
		}
		n, from, rx, err := p.conn.ReadFrom(p.buf[:], min(left, waitSlice))
		if errors.Is(err, sockts.ErrTimeout) {
			if cerr := ctx.Err(); cerr != nil {
				return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, cerr)
			}
			continue
		}
		if err != nil {
			return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, err)
		}
		p.C.BytesReceived.Add(uint64(n) + p.overhead())
		if from != p.cfg.Server && from.Addr().Unmap() != p.cfg.Server.Addr().Unmap() {
			// Not the server: refused before its stamp is translated, so a
			// stray packet never ends the wait for the real reply.
			p.C.Rejects[RejectSource].Add(1)
			continue
		}
		t1, terr := p.realtime(tx)
		t4, rerr := p.realtime(rx)
		if terr != nil || rerr != nil {
			// The reply may still be ours; without T1 and T4 in one domain it
			// is no sample, and the next request starts afresh in basic mode.
			p.C.Untranslated.Add(1)
			p.prev.valid = false
			return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, errors.Join(terr, rerr))
		}
		var h Header
		if err = ParseReply(p.buf[:n], cookie, xcookie, t1, &h); err != nil {
			r := RejectOf(err)
			p.C.Rejects[r].Add(1)
			if r == RejectOrigin || r == RejectSource {
				continue // not the answer to this request: keep waiting for it
			}
			if r == RejectKoD {
				p.kiss(h.KissCode)
			}
			return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, err)
		}
		p.C.Replies.Add(1)
		s := Sample{T1: t1, T2: h.ReceiveNS, T3: h.TransmitNS, T4: t4, TxSource: tx.Source, RxSource: rx.Source, Header: h}
		// An interleaved reply whose transmit timestamp is the previous reply's
		// basic one means the server had no kernel timestamp for it: the
		// exchange it completes was shipped as that basic sample already, and
		// shipping it again would give two records of one event.
		repeat := h.Interleaved && p.prev.valid && h.TransmitNS == p.prev.t3
		if h.Interleaved && !repeat {
			// The transmit timestamp completes the previous exchange.
			s = Sample{T1: p.prev.t1, T2: p.prev.t2, T3: h.TransmitNS, T4: p.prev.t4, TxSource: p.prev.tx, RxSource: p.prev.rx, Interleaved: true, Header: h}
			p.C.Interleaved.Add(1)
		}
		p.prev = exchangeState{valid: true, t1: t1, t2: h.ReceiveNS, t4: t4, t2raw: h.ReceiveRaw, tx: tx.Source, rx: rx.Source}
		if !h.Interleaved {
			p.prev.t3 = h.TransmitNS
		}
		if repeat {
			p.C.Repeats.Add(1)
			return Sample{}, errRepeat
		}
		s.Mixed = s.TxSource != s.RxSource
		if s.T3 < s.T2 {
			p.C.Rejects[RejectBogus].Add(1)
			return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, rejectf(RejectBogus, "server transmit %d before its receive %d", s.T3, s.T2))
		}
		s.OffsetNS = Offset(s.T1, s.T2, s.T3, s.T4)
		s.DispersionNS = dispersion(h.Precision, s.T1, s.T4)
		s.DelayNS = Delay(s.T1, s.T2, s.T3, s.T4)
		if s.DelayNS < 0 {
			p.C.Rejects[RejectBogus].Add(1)
			return Sample{}, fmt.Errorf("ntp %s: %w", p.cfg.Server, rejectf(RejectBogus, "negative delay %d ns", s.DelayNS))
		}
		return s, nil
	}
}

// warmUp sends one byte to the discard port of the host's own loopback
// address just before a request, from the same socket. A request sent after
// a second of sleep runs the kernel's send path cold: on the test VM its
// software transmit timestamp (T1) came 2.0-2.5 us before the server's
// receive timestamp (T2), against 0.4 us for one sent just after another
// datagram on the same path, and the reply leg (T4 - T3, sent by a server
// that had just received) took 0.6-1.2 us: the request leg's extra time
// biased every offset by -0.5 to -0.9 us and its jitter was most of the
// spread. The warm-up datagram runs most of the same code (UDP, IP, the
// device queue, the transmit timestamp, the receive side) a few
// microseconds earlier and never leaves the host; it halved the extra time
// and the jitter (docs/performance.md). Its transmit timestamp is read and
// dropped by the socket (WriteTo reads it); a failure to send it is of no consequence.
func (p *Prober) warmUp() {
	if _, kernel := p.conn.(*sockts.Conn); p.cfg.NoWarmUp || !kernel {
		return // (a test's fake conn has no send path to warm)
	}
	to := netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 9)
	if s := p.cfg.Server.Addr(); s.Is6() && !s.Is4In6() {
		to = netip.AddrPortFrom(netip.IPv6Loopback(), 9)
	}
	_, _ = p.conn.WriteTo(p.warm[:], to)
}

func (p *Prober) kiss(code string) {
	switch code {
	case "RATE":
		p.C.KissRate.Add(1)
		p.rateFactor = min(2*p.rateFactor, maxRateFactor)
	case "DENY", "RSTR":
		p.C.KissDeny.Add(1)
		p.holdUntil = time.Now().Add(denyHoldOff)
	}
}
