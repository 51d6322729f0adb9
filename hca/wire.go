package hca

// The wire format of HCA messages between agents.
//
// Every message is one UDP datagram, all integers big-endian. It starts with
// a 60-byte header and ends with an HMAC-SHA256 over everything before it;
// between the two, run, report and model messages carry an extension:
//
//	off len field
//	  0   2 magic "HC" (0x48 0x43)
//	  2   1 version (2)
//	  3   1 type (below)
//	  4   8 session ID, shared by the agents of one cluster configuration
//	 12   8 epoch: the sender's start nonce (random, never 0)
//	 20   8 peer epoch: request: the receiver's epoch as the sender last
//	          learnt it (0: not known yet); answer: the request's epoch, echoed
//	 28   4 sender's rank
//	 32   4 receiver's rank
//	 36   8 sequence number: a request's, per sender and epoch; an answer echoes its request's
//	 44   8 send: ping, pong: the requester's clock when the ping left (echoed);
//	          report: the exchange's send stamp; model, model-ack: the sync round
//	 52   8 remote: pong, report: the responder's clock (ns of its
//	          CLOCK_MONOTONIC_RAW); 0 in the other types
//	 60   n extension (n by type)
//	60+n 32 HMAC-SHA256 over bytes 0..59+n with the cluster key
//
//	type          dir      n  length  extension
//	1 ping        request  0   92
//	2 pong        answer   0   92
//	3 run         request  8  100     target rank (4), burst (4: ping-pongs, 0..16; 0 is 1)
//	4 report      answer  16  108     target rank (4), status (4: 0 answered, 1 lost), recv stamp (8)
//	5 model       request 64  156     the receiver's clock model: origin, intercept, slope
//	                                  (IEEE 754 bits), points, mean x, residual (bits),
//	                                  slope error (bits), floor (8 each)
//	6 model-ack   answer   0   92
//
// A run asks the receiver to run a burst of back-to-back ping-pongs with the
// target rank and to answer with a report of the one with the shortest round
// trip (how a driver makes two other nodes exchange); a
// model gives the receiver its clock model after a sync round, and the
// model-ack confirms it.
//
// A receiver checks magic, version and that the length is the one of the type
// byte, then the MAC (in constant time, hmac.Equal), and only then looks at
// the fields, so that nothing unauthenticated is interpreted beyond its
// length.
//
// Replay protection without a clock. An agent draws its epoch from
// crypto/rand when its Endpoint starts and numbers its requests 1, 2, … in
// it, so (epoch, sequence number) never repeats, whatever the wall clock
// says after a reboot without a battery-backed RTC (version 1 numbered from
// the wall clock, and a rank restarted with its clock behind was dropped as
// replayed until its peers restarted). Both epochs are under the MAC, so
// only a holder of the cluster key can name them. A receiver keeps, per
// peer, the peer's current epoch, the epochs it has retired and a
// replayWindow over the current epoch's requests, and takes a message as
// follows (udp.go):
//
//   - An answer must echo the receiver's own epoch: it answers a request of
//     this start, and only its waiting request takes it (once); anything
//     else is a late answer to an earlier start, counted unmatched.
//   - A message naming the receiver's epoch (an answer, or a request with the
//     right peer epoch) was made after the receiver started: it is fresh.
//     If it comes from an epoch of the sender not seen before, that is the
//     sender's new start: the old epoch is retired, the window starts
//     afresh. This is how peers learn a restarted rank's epoch within one
//     round: its first ping is answered (below), the pong names its epoch,
//     and its next message names theirs.
//   - A message from a retired epoch is refused: a capture of an earlier
//     start replayed after the sender restarted.
//   - A run or model must name the receiver's epoch; one that does not is
//     refused (stale epoch): it was made for an earlier start of the
//     receiver — a capture replayed after the receiver restarted, whose
//     model would otherwise be installed — or sent before the sender learnt
//     of the restart (its next round does).
//   - A ping that does not name the receiver's epoch from a sender epoch not
//     known yet is answered but changes nothing (a window of its own keeps
//     a repeated one out): it is how a restarted peer (or the driver, after
//     this node restarted) is first heard from. A pong is this node's clock
//     reading, sent to the address the peer list gives, and its requester
//     takes it only if it echoes its current epoch and a waiting sequence
//     number, so answering a ping replayed across this node's restart gives
//     nobody anything.
//   - Within the current epoch the window refuses every sequence number seen
//     before (or too old to tell).
//
// A requester that does not know the receiver's epoch yet, or whose last
// run or model to it went unanswered (it may have restarted), pings it
// before the next run or model.
//
// What epochs cannot order: an eavesdropper on the path who withholds a
// datagram of a peer's start the receiver never heard from, and releases
// it after the peer restarted again, makes the receiver take that start
// for the newer one (and refuse the real one as retired) until either
// restarts; without stable storage starts carry no order. Whoever can
// withhold datagrams can stop the synchronisation anyway. A receiver
// remembers the last 16 epochs of each peer.
//
// Models are ordered too: within a sender epoch a model's round must be
// newer than the last one taken (the same round again is a retransmission,
// acknowledged but not taken twice); an older one is refused and counted.
// A driver's new epoch starts its rounds afresh.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math"

	"github.com/monagent/monagent/timebase"
)

// Wire format constants.
const (
	wireVersion = 2
	macLen      = sha256.Size
	headerLen   = 60
	messageLen  = headerLen + macLen // ping, pong and model-ack: 92 bytes
	// maxMessageLen is the longest message (a model).
	maxMessageLen = headerLen + modelExtLen + macLen

	// maxBurst is the most ping-pongs a run may ask for.
	maxBurst = 16

	runExtLen    = 8
	reportExtLen = 16
	modelExtLen  = 64

	magic0, magic1 = 'H', 'C'
)

// msgType is a message's type.
type msgType uint8

// message types.
const (
	msgPing     msgType = 1 // request: answer with a pong
	msgPong     msgType = 2 // answer to a ping
	msgRun      msgType = 3 // request: ping Target, answer with a report
	msgReport   msgType = 4 // answer to a run
	msgModel    msgType = 5 // request: here is your model; answer with a model-ack
	msgModelAck msgType = 6 // answer to a model
)

func (t msgType) String() string {
	switch t {
	case msgPing:
		return "ping"
	case msgPong:
		return "pong"
	case msgRun:
		return "run"
	case msgReport:
		return "report"
	case msgModel:
		return "model"
	case msgModelAck:
		return "model-ack"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// IsAnswer reports whether t answers a request (and so echoes the
// requester's sequence number).
func (t msgType) IsAnswer() bool { return t == msgPong || t == msgReport || t == msgModelAck }

// wireLen is the encoded length of a message of type t, 0 for unknown types.
func wireLen(t msgType) int {
	switch t {
	case msgPing, msgPong, msgModelAck:
		return messageLen
	case msgRun:
		return messageLen + runExtLen
	case msgReport:
		return messageLen + reportExtLen
	case msgModel:
		return messageLen + modelExtLen
	}
	return 0
}

// Decode errors. Decode wraps them with the datagram's length and detail;
// test with errors.Is.
var (
	errMalformed = errors.New("hca wire: malformed message") // short, long, bad magic, inconsistent fields
	errVersion   = errors.New("hca wire: unknown version")
	errType      = errors.New("hca wire: unknown message type")
	errBadMAC    = errors.New("hca wire: bad MAC") // unauthenticated: wrong key or tampered
)

// message is one message of any type. Times are nanoseconds of the named
// node's clock. Fields a type does not carry are zero after Decode and
// ignored by Append.
type message struct {
	Type    msgType
	Session uint64
	Epoch   uint64 // the sender's epoch (start nonce), never 0
	// PeerEpoch is, in a request, the receiver's epoch as the sender knows
	// it (0: not yet known); in an answer, the request's Epoch, echoed.
	PeerEpoch uint64
	From      uint32 // sender's rank
	To        uint32 // receiver's rank
	Seq       uint64 // request: the sender's sequence number; answer: the request's
	Send      int64  // ping, pong, report: the exchange's send stamp; model, model-ack: the round
	Remote    int64  // pong, report: responder's clock; otherwise 0
	Target    uint32 // run, report: the rank pinged
	Burst     uint32 // run: ping-pongs in the burst, 0..maxBurst (0 is 1)
	Lost      bool   // report: the ping got no answer (Send, Remote and Recv are 0)
	Recv      int64  // report: the pinging node's clock when the pong came back
	Model     timebase.LinearModel
}

// codec encodes and decodes messages with one key, reusing its HMAC state so
// that neither direction allocates in steady state. A codec is not safe for
// concurrent use; give each goroutine its own.
type codec struct {
	mac hash.Hash
	sum [macLen]byte
}

// newCodec returns a codec keyed with key. The key is copied by HMAC; callers
// keep it out of logs and errors.
func newCodec(key []byte) *codec {
	return &codec{mac: hmac.New(sha256.New, key)}
}

// Append appends the encoding of m to dst and returns the extended slice. It
// does not allocate when dst has maxMessageLen bytes of spare capacity.
func (c *codec) append(dst []byte, m message) []byte {
	start := len(dst)
	be := binary.BigEndian
	dst = append(dst, magic0, magic1, wireVersion, byte(m.Type))
	dst = be.AppendUint64(dst, m.Session)
	dst = be.AppendUint64(dst, m.Epoch)
	dst = be.AppendUint64(dst, m.PeerEpoch)
	dst = be.AppendUint32(dst, m.From)
	dst = be.AppendUint32(dst, m.To)
	dst = be.AppendUint64(dst, m.Seq)
	dst = be.AppendUint64(dst, uint64(m.Send))
	dst = be.AppendUint64(dst, uint64(m.Remote))
	switch m.Type {
	case msgRun:
		dst = be.AppendUint32(dst, m.Target)
		dst = be.AppendUint32(dst, m.Burst)
	case msgReport:
		dst = be.AppendUint32(dst, m.Target)
		var status uint32
		if m.Lost {
			status = 1
		}
		dst = be.AppendUint32(dst, status)
		dst = be.AppendUint64(dst, uint64(m.Recv))
	case msgModel:
		md := m.Model
		dst = be.AppendUint64(dst, uint64(md.Origin))
		dst = be.AppendUint64(dst, uint64(md.Intercept))
		dst = be.AppendUint64(dst, math.Float64bits(md.Slope))
		dst = be.AppendUint64(dst, uint64(int64(md.N)))
		dst = be.AppendUint64(dst, uint64(md.MeanX))
		dst = be.AppendUint64(dst, math.Float64bits(md.ResidualNS))
		dst = be.AppendUint64(dst, math.Float64bits(md.SlopeErr))
		dst = be.AppendUint64(dst, uint64(md.FloorNS))
	}
	c.mac.Reset()
	c.mac.Write(dst[start:])
	return c.mac.Sum(dst)
}

// Decode authenticates and parses one datagram. Errors wrap errMalformed,
// errVersion, errType or errBadMAC, checked in that order: nothing but the
// magic, version, type byte and length is looked at before the MAC has been
// verified.
func (c *codec) decode(b []byte) (message, error) {
	if len(b) < 4 || b[0] != magic0 || b[1] != magic1 {
		return message{}, fmt.Errorf("hca wire: %d-byte datagram without magic: %w", len(b), errMalformed)
	}
	if b[2] != wireVersion {
		return message{}, fmt.Errorf("hca wire: version %d: %w", b[2], errVersion)
	}
	typ := msgType(b[3])
	want := wireLen(typ)
	if want == 0 {
		return message{}, fmt.Errorf("hca wire: %d-byte datagram of %v: %w", len(b), typ, errType)
	}
	if len(b) != want {
		return message{}, fmt.Errorf("hca wire: %d-byte %v, want %d bytes: %w", len(b), typ, want, errMalformed)
	}
	body := len(b) - macLen
	c.mac.Reset()
	c.mac.Write(b[:body])
	if !hmac.Equal(c.mac.Sum(c.sum[:0]), b[body:]) {
		return message{}, fmt.Errorf("hca wire: %d-byte %v: %w", len(b), typ, errBadMAC)
	}
	be := binary.BigEndian
	m := message{
		Type:      typ,
		Session:   be.Uint64(b[4:]),
		Epoch:     be.Uint64(b[12:]),
		PeerEpoch: be.Uint64(b[20:]),
		From:      be.Uint32(b[28:]),
		To:        be.Uint32(b[32:]),
		Seq:       be.Uint64(b[36:]),
		Send:      int64(be.Uint64(b[44:])),
		Remote:    int64(be.Uint64(b[52:])),
	}
	ext := b[headerLen:body]
	if m.Epoch == 0 || (typ.IsAnswer() && m.PeerEpoch == 0) {
		return message{}, fmt.Errorf("hca wire: %v with epoch %d, peer epoch %d: %w", typ, m.Epoch, m.PeerEpoch, errMalformed)
	}
	switch typ {
	case msgPing, msgRun, msgModel, msgModelAck:
		if m.Remote != 0 {
			return message{}, fmt.Errorf("hca wire: %v with a responder clock: %w", typ, errMalformed)
		}
	}
	switch typ {
	case msgRun:
		m.Target, m.Burst = be.Uint32(ext), be.Uint32(ext[4:])
		if m.Send != 0 || m.Burst > maxBurst {
			return message{}, fmt.Errorf("hca wire: run with a send stamp or a burst of %d (at most %d): %w", m.Burst, maxBurst, errMalformed)
		}
	case msgReport:
		m.Target = be.Uint32(ext)
		switch be.Uint32(ext[4:]) {
		case 0:
		case 1:
			m.Lost = true
		default:
			return message{}, fmt.Errorf("hca wire: report status %d: %w", be.Uint32(ext[4:]), errMalformed)
		}
		m.Recv = int64(be.Uint64(ext[8:]))
		if m.Lost && (m.Send != 0 || m.Remote != 0 || m.Recv != 0) {
			return message{}, fmt.Errorf("hca wire: report of a lost exchange with stamps: %w", errMalformed)
		}
	case msgModel:
		md := timebase.LinearModel{
			Origin:     int64(be.Uint64(ext[0:])),
			Intercept:  int64(be.Uint64(ext[8:])),
			Slope:      math.Float64frombits(be.Uint64(ext[16:])),
			MeanX:      int64(be.Uint64(ext[32:])),
			ResidualNS: math.Float64frombits(be.Uint64(ext[40:])),
			SlopeErr:   math.Float64frombits(be.Uint64(ext[48:])),
			FloorNS:    int64(be.Uint64(ext[56:])),
		}
		n := int64(be.Uint64(ext[24:]))
		if err := checkModel(md, n); err != nil {
			return message{}, fmt.Errorf("hca wire: model: %v: %w", err, errMalformed)
		}
		md.N = int(n)
		m.Model = md
	}
	return m, nil
}

// checkModel refuses what no fit produces: non-finite or absurd slopes,
// negative or NaN errors, a negative floor or point count.
func checkModel(m timebase.LinearModel, n int64) error {
	switch {
	case math.IsNaN(m.Slope) || math.Abs(m.Slope) > 1:
		return fmt.Errorf("slope %v", m.Slope)
	case !(m.ResidualNS >= 0) || math.IsInf(m.ResidualNS, 0):
		return fmt.Errorf("residual %v", m.ResidualNS)
	case !(m.SlopeErr >= 0) || math.IsInf(m.SlopeErr, 0):
		return fmt.Errorf("slope error %v", m.SlopeErr)
	case n < 0 || n > math.MaxInt32:
		return fmt.Errorf("%d points", n)
	case m.FloorNS < 0:
		return fmt.Errorf("floor %d ns", m.FloorNS)
	}
	return nil
}

// replayWindow rejects sequence numbers seen before or too old to tell, and
// accepts ones that arrive out of order within the last windowSize, as the
// anti-replay windows of IPsec (RFC 4303 §3.4.3) and DTLS (RFC 6347 §4.1.2.6)
// do. Feed it only authenticated messages. Keep one per peer and direction,
// and Reset it when the peer's epoch changes (its numbering starts again).
// The zero value is an empty window. Not safe for concurrent use.
type replayWindow struct {
	top     uint64 // highest sequence number accepted
	bits    uint64 // bit i: top-i accepted
	started bool
}

// windowSize is how far behind the highest sequence number accepted a late
// one may still be accepted.
const windowSize = 64

// Accept reports whether seq is new and within the window, and records it if
// so.
func (w *replayWindow) Accept(seq uint64) bool {
	if !w.started {
		w.started, w.top, w.bits = true, seq, 1
		return true
	}
	if seq > w.top {
		if d := seq - w.top; d >= windowSize {
			w.bits = 1
		} else {
			w.bits = w.bits<<d | 1
		}
		w.top = seq
		return true
	}
	d := w.top - seq
	if d >= windowSize {
		return false // too old to tell
	}
	if w.bits&(1<<d) != 0 {
		return false // duplicate
	}
	w.bits |= 1 << d
	return true
}

// Reset empties the window.
func (w *replayWindow) Reset() { *w = replayWindow{} }
