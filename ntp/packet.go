package ntp

import (
	"encoding/binary"
	"fmt"

	"github.com/facebook/time/ntp/protocol"

	"github.com/monagent/monagent/reject"
)

// Reject says why a reply was not used as a sample.
type Reject uint8

// Reject reasons; each has a counter.
const (
	RejectNone          Reject = iota
	RejectShort                // fewer than 48 bytes
	RejectMalformed            // the trailer (extension fields, MAC) does not parse
	RejectMode                 // not mode 4 (server)
	RejectVersion              // version outside 1..4
	RejectOrigin               // origin timestamp is not our cookie: stale, duplicate or spoofed
	RejectKoD                  // Kiss-o'-Death (stratum 0)
	RejectUnsynced             // leap 3 (alarm) or stratum 16
	RejectZeroTimestamp        // receive or transmit timestamp is zero
	RejectBogus                // server transmit before its receive, or a negative delay
	RejectSource               // the reply came from another address
	RejectField                // a header field no server sends (a precision coarser than 1 s)
	numRejects
)

// NumRejects is how many reasons there are, RejectNone included.
const NumRejects = numRejects

// MaxPrecision is the coarsest precision a reply may give: log2 seconds, 0
// for a clock read to the second. Servers give −6 to −30; a coarser one is
// no server's, and would make the sample's dispersion overflow.
const MaxPrecision = 0

var rejectNames = [...]string{"none", "short", "malformed", "mode", "version", "origin", "kod", "unsynced", "zero_timestamp", "bogus", "source", "field"}

func (r Reject) String() string { return reject.Name(rejectNames[:], uint8(r)) }

// RejectError is a reply that was not used, with its reason.
type RejectError = reject.Error[Reject]

func rejectf(r Reject, format string, a ...any) error {
	return reject.Errorf("ntp reply", r, format, a...)
}

// RejectOf returns the reason of a *RejectError, or RejectNone.
func RejectOf(err error) Reject { return reject.Of[Reject](err) }

// Synced says whether the server is synchronised, as it says it: leap not
// 3 (alarm) and a stratum from 1 to 15.
func (h *Header) Synced() bool { return h.Leap != 3 && h.Stratum >= 1 && h.Stratum <= 15 }

// Header is what a valid reply says about the server.
type Header struct {
	Leap           uint8
	Version        uint8
	Stratum        uint8
	Poll           int8
	Precision      int8
	RootDelayNS    int64
	RootDispNS     int64
	RefID          uint32
	ReferenceNS    int64 // server's reference time (Unix ns)
	ReceiveNS      int64 // T2 (Unix ns, server clock)
	TransmitNS     int64 // T3 (Unix ns, server clock)
	KissCode       string
	ExtensionBytes int
	// ReceiveRaw is the receive timestamp as sent (NTP format): an interleaved
	// request echoes it as its origin.
	ReceiveRaw uint64
	// Interleaved says the reply answered an interleaved request: its transmit
	// timestamp belongs to the server's previous reply.
	Interleaved bool
}

// RefIDString renders the reference id: the ASCII code of a stratum 0/1 server
// (GPS, PPS, RATE), else its IPv4 address; hex as chronyc prints it when neither
// applies (e.g. chronyd's local reference, 7F7F0101).
func (h *Header) RefIDString() string {
	b := [4]byte{byte(h.RefID >> 24), byte(h.RefID >> 16), byte(h.RefID >> 8), byte(h.RefID)}
	if h.Stratum <= 1 {
		n := 0
		for n < 4 && b[n] >= 0x20 && b[n] < 0x7f {
			n++
		}
		rest := n
		for rest < 4 && b[rest] == 0 {
			rest++
		}
		if n > 0 && rest == 4 {
			return string(b[:n])
		}
		return fmt.Sprintf("%08X", h.RefID)
	}
	return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3])
}

// The NTP era that contains pivot: NTP seconds wrap every 2^32 s (first in
// 2036); a timestamp is placed in the era that puts it nearest the pivot.
const eraNS = int64(1) << 32 * 1_000_000_000

// ToUnixNS converts an NTP timestamp to Unix nanoseconds, in the era nearest to
// pivot (Unix ns, e.g. the local send time).
func ToUnixNS(sec, frac uint32, pivot int64) int64 {
	ns := int64(sec)*1_000_000_000 + int64((uint64(frac)*1_000_000_000+1<<31)>>32) - protocol.NanosecondsToUnix
	for ns < pivot-eraNS/2 {
		ns += eraNS
	}
	for ns > pivot+eraNS/2 {
		ns -= eraNS
	}
	return ns
}

// FromUnixNS converts Unix nanoseconds to an NTP timestamp (rounded).
func FromUnixNS(ns int64) (sec, frac uint32) {
	n := ns + protocol.NanosecondsToUnix
	s := n / 1_000_000_000
	rem := n - s*1_000_000_000
	f := (uint64(rem)<<32 + 500_000_000) / 1_000_000_000
	if f>>32 != 0 { // rounded up to the next second
		s++
		f = 0
	}
	return uint32(s), uint32(f)
}

// shortToNS converts the NTP short format (16.16 seconds) to ns.
func shortToNS(v uint32) int64 { return int64((uint64(v)*1_000_000_000 + 1<<15) >> 16) }

// NewRequest writes a client-mode NTPv4 request carrying cookie as its transmit
// timestamp into b (48 bytes) and returns it. For an interleaved request, origin
// is the receive timestamp of the server's previous reply and xcookie our receive
// time of it (the server echoes xcookie as the reply's origin); both 0 for a
// basic request.
func NewRequest(b []byte, cookie, origin, xcookie uint64) ([]byte, error) {
	p := protocol.Packet{
		Settings:     0<<6 | 4<<3 | 3, // leap 0, version 4, mode 3 (client)
		OrigTimeSec:  uint32(origin >> 32),
		OrigTimeFrac: uint32(origin),
		RxTimeSec:    uint32(xcookie >> 32),
		RxTimeFrac:   uint32(xcookie),
		TxTimeSec:    uint32(cookie >> 32),
		TxTimeFrac:   uint32(cookie),
	}
	out, err := p.Bytes()
	if err != nil {
		return nil, err
	}
	return append(b[:0], out...), nil
}

// ParseReply checks a server reply to the request that carried cookie as its
// transmit timestamp (and, for an interleaved request, xcookie as its receive
// timestamp; 0 for a basic request) and returns what it says. pivot (Unix ns, the
// send time) places timestamps in the right NTP era. Every refusal is a
// *RejectError.
func ParseReply(b []byte, cookie, xcookie uint64, pivot int64, h *Header) error {
	var p protocol.Packet
	if len(b) < protocol.PacketSizeBytes {
		return rejectf(RejectShort, "%d bytes", len(b))
	}
	if err := p.UnmarshalBinary(b); err != nil {
		return rejectf(RejectMalformed, "%v", err)
	}
	leap, version, mode := p.Settings>>6, (p.Settings>>3)&7, p.Settings&7
	if mode != 4 {
		return rejectf(RejectMode, "mode %d", mode)
	}
	if version < 1 || version > 4 {
		return rejectf(RejectVersion, "version %d", version)
	}
	origin := uint64(p.OrigTimeSec)<<32 | uint64(p.OrigTimeFrac)
	interleaved := xcookie != 0 && origin == xcookie
	if origin != cookie && !interleaved {
		return rejectf(RejectOrigin, "origin %016x, sent %016x", origin, cookie)
	}
	*h = Header{
		Interleaved: interleaved,
		ReceiveRaw:  uint64(p.RxTimeSec)<<32 | uint64(p.RxTimeFrac),
		Leap:        leap, Version: version, Stratum: p.Stratum, Poll: p.Poll, Precision: p.Precision,
		RootDelayNS: shortToNS(p.RootDelay), RootDispNS: shortToNS(p.RootDispersion), RefID: p.ReferenceID,
		ExtensionBytes: len(b) - protocol.PacketSizeBytes,
	}
	if p.Stratum == 0 {
		var code [4]byte
		binary.BigEndian.PutUint32(code[:], p.ReferenceID)
		h.KissCode = string(code[:])
		return rejectf(RejectKoD, "kiss code %q", h.KissCode)
	}
	if leap == 3 || p.Stratum >= 16 {
		return rejectf(RejectUnsynced, "leap %d, stratum %d", leap, p.Stratum)
	}
	if p.Precision > MaxPrecision {
		return rejectf(RejectField, "precision 2^%d s, coarser than 2^%d s", p.Precision, MaxPrecision)
	}
	if (p.RxTimeSec == 0 && p.RxTimeFrac == 0) || (p.TxTimeSec == 0 && p.TxTimeFrac == 0) {
		return rejectf(RejectZeroTimestamp, "receive %d.%d transmit %d.%d", p.RxTimeSec, p.RxTimeFrac, p.TxTimeSec, p.TxTimeFrac)
	}
	h.ReceiveNS = ToUnixNS(p.RxTimeSec, p.RxTimeFrac, pivot)
	h.TransmitNS = ToUnixNS(p.TxTimeSec, p.TxTimeFrac, pivot)
	if p.RefTimeSec != 0 || p.RefTimeFrac != 0 {
		h.ReferenceNS = ToUnixNS(p.RefTimeSec, p.RefTimeFrac, pivot)
	}
	// In an interleaved reply the transmit timestamp is the previous reply's, so
	// it precedes this receive timestamp; the prober checks it against the
	// previous exchange instead.
	if !interleaved && h.TransmitNS < h.ReceiveNS {
		return rejectf(RejectBogus, "server transmit %d before its receive %d", h.TransmitNS, h.ReceiveNS)
	}
	return nil
}

// Offset is the local clock minus the server's clock from one exchange (RFC 5905
// section 8, with chrony's sign: positive when the local clock is ahead): t1
// client send, t2 server receive, t3 server send, t4 client receive.
func Offset(t1, t2, t3, t4 int64) int64 { return ((t1 - t2) + (t4 - t3)) / 2 }

// Delay is the round-trip delay of one exchange.
func Delay(t1, t2, t3, t4 int64) int64 { return (t4 - t1) - (t3 - t2) }
