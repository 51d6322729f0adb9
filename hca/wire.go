package hca

// The wire format of HCA exchanges between agents.
//
// Every message is one UDP datagram of exactly MessageLen bytes, all integers
// big-endian:
//
//	off len field
//	  0   2 magic "HC" (0x48 0x43)
//	  2   1 version (1)
//	  3   1 type: 1 ping (request), 2 pong (answer)
//	  4   8 session ID, random per sync session, shared by its agents
//	 12   4 sender's rank
//	 16   4 receiver's rank
//	 20   8 sequence number: a ping's, per sender; a pong echoes its ping's
//	 28   8 send stamp: the requester's clock when the ping left (echoed on the pong)
//	 36   8 responder's clock (ns of its CLOCK_MONOTONIC_RAW) on a pong; 0 on a ping
//	 44  32 HMAC-SHA256 over bytes 0..43 with the cluster key
//
// A receiver checks magic, version and length, then the MAC (in constant time,
// hmac.Equal), and only then looks at the type and the fields, so that nothing
// unauthenticated is interpreted. A pong's sequence number is its ping's, which
// the requester chose and never reuses, so one ReplayWindow per peer and
// direction rejects replayed pings and pongs alike.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
)

// Wire format constants.
const (
	WireVersion = 1
	MACLen      = sha256.Size
	headerLen   = 44
	MessageLen  = headerLen + MACLen // 76 bytes

	magic0, magic1 = 'H', 'C'
)

// MsgType is a message's type.
type MsgType uint8

// Message types.
const (
	MsgPing MsgType = 1 // request
	MsgPong MsgType = 2 // answer
)

func (t MsgType) String() string {
	switch t {
	case MsgPing:
		return "ping"
	case MsgPong:
		return "pong"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Decode errors. Decode wraps them with the datagram's length and detail;
// test with errors.Is.
var (
	ErrMalformed = errors.New("hca wire: malformed message") // short, long, bad magic, inconsistent fields
	ErrVersion   = errors.New("hca wire: unknown version")
	ErrType      = errors.New("hca wire: unknown message type")
	ErrBadMAC    = errors.New("hca wire: bad MAC") // unauthenticated: wrong key or tampered
)

// Message is a ping or a pong. Times are nanoseconds of the named node's
// clock.
type Message struct {
	Type    MsgType
	Session uint64
	From    uint32 // sender's rank
	To      uint32 // receiver's rank
	Seq     uint64 // ping: the sender's sequence number; pong: the ping's
	Send    int64  // requester's clock when the ping left; echoed on the pong
	Remote  int64  // pong: responder's clock; ping: 0
}

// Codec encodes and decodes messages with one key, reusing its HMAC state so
// that neither direction allocates in steady state. A Codec is not safe for
// concurrent use; give each goroutine its own.
type Codec struct {
	mac hash.Hash
	sum [MACLen]byte
}

// NewCodec returns a Codec keyed with key. The key is copied by HMAC; callers
// keep it out of logs and errors.
func NewCodec(key []byte) *Codec {
	return &Codec{mac: hmac.New(sha256.New, key)}
}

// Append appends the encoding of m to dst and returns the extended slice. It
// does not allocate when dst has MessageLen bytes of spare capacity.
func (c *Codec) Append(dst []byte, m Message) []byte {
	start := len(dst)
	dst = append(dst, magic0, magic1, WireVersion, byte(m.Type))
	dst = binary.BigEndian.AppendUint64(dst, m.Session)
	dst = binary.BigEndian.AppendUint32(dst, m.From)
	dst = binary.BigEndian.AppendUint32(dst, m.To)
	dst = binary.BigEndian.AppendUint64(dst, m.Seq)
	dst = binary.BigEndian.AppendUint64(dst, uint64(m.Send))
	dst = binary.BigEndian.AppendUint64(dst, uint64(m.Remote))
	c.mac.Reset()
	c.mac.Write(dst[start:])
	return c.mac.Sum(dst)
}

// Decode authenticates and parses one datagram. Errors wrap ErrMalformed,
// ErrVersion, ErrBadMAC or ErrType, checked in that order: nothing but the
// magic, version and length is looked at before the MAC has been verified.
func (c *Codec) Decode(b []byte) (Message, error) {
	if len(b) < 4 || b[0] != magic0 || b[1] != magic1 {
		return Message{}, fmt.Errorf("hca wire: %d-byte datagram without magic: %w", len(b), ErrMalformed)
	}
	if b[2] != WireVersion {
		return Message{}, fmt.Errorf("hca wire: version %d: %w", b[2], ErrVersion)
	}
	if len(b) != MessageLen {
		return Message{}, fmt.Errorf("hca wire: %d bytes, want %d: %w", len(b), MessageLen, ErrMalformed)
	}
	c.mac.Reset()
	c.mac.Write(b[:headerLen])
	if !hmac.Equal(c.mac.Sum(c.sum[:0]), b[headerLen:]) {
		return Message{}, fmt.Errorf("hca wire: %d-byte message: %w", len(b), ErrBadMAC)
	}
	m := Message{
		Type:    MsgType(b[3]),
		Session: binary.BigEndian.Uint64(b[4:]),
		From:    binary.BigEndian.Uint32(b[12:]),
		To:      binary.BigEndian.Uint32(b[16:]),
		Seq:     binary.BigEndian.Uint64(b[20:]),
		Send:    int64(binary.BigEndian.Uint64(b[28:])),
		Remote:  int64(binary.BigEndian.Uint64(b[36:])),
	}
	switch m.Type {
	case MsgPing:
		if m.Remote != 0 {
			return Message{}, fmt.Errorf("hca wire: ping with a responder clock: %w", ErrMalformed)
		}
	case MsgPong:
	default:
		return Message{}, fmt.Errorf("hca wire: %v: %w", m.Type, ErrType)
	}
	return m, nil
}

// Encode returns the encoding of m with key (a new Codec each call; hot paths
// keep a Codec and use Append).
func Encode(key []byte, m Message) []byte {
	return NewCodec(key).Append(make([]byte, 0, MessageLen), m)
}

// Decode authenticates and parses b with key; see Codec.Decode.
func Decode(key, b []byte) (Message, error) {
	return NewCodec(key).Decode(b)
}

// ReplayWindow rejects sequence numbers seen before or too old to tell, and
// accepts ones that arrive out of order within the last WindowSize, as the
// anti-replay windows of IPsec (RFC 4303 §3.4.3) and DTLS (RFC 6347 §4.1.2.6)
// do. Feed it only authenticated messages. Keep one per peer and direction,
// and Reset it with the session. The zero value is an empty window. Not safe
// for concurrent use.
type ReplayWindow struct {
	top     uint64 // highest sequence number accepted
	bits    uint64 // bit i: top-i accepted
	started bool
}

// WindowSize is how far behind the highest sequence number accepted a late
// one may still be accepted.
const WindowSize = 64

// Accept reports whether seq is new and within the window, and records it if
// so.
func (w *ReplayWindow) Accept(seq uint64) bool {
	if !w.started {
		w.started, w.top, w.bits = true, seq, 1
		return true
	}
	if seq > w.top {
		if d := seq - w.top; d >= WindowSize {
			w.bits = 1
		} else {
			w.bits = w.bits<<d | 1
		}
		w.top = seq
		return true
	}
	d := w.top - seq
	if d >= WindowSize {
		return false // too old to tell
	}
	if w.bits&(1<<d) != 0 {
		return false // duplicate
	}
	w.bits |= 1 << d
	return true
}

// Reset empties the window.
func (w *ReplayWindow) Reset() { *w = ReplayWindow{} }
