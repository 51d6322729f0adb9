package ntp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/facebook/time/ntp/control"
)

// NTP mode 6 (control messages, RFC 1305 appendix B; what ntpq speaks): a
// 12-byte header, then up to 468 octets of data per datagram. A reply longer
// than one datagram comes in fragments, each saying where its data goes
// (offset, count) and all but the last with the More bit.
const (
	ctlHeaderLen = 12
	// ctlMaxFragments is the most fragments one reply may have (ntpq's
	// MAXFRAGS); a longer one is malformed.
	ctlMaxFragments = 32
	// ctlMaxData bounds where a fragment's data may end: 32 fragments of
	// ntpd's largest (468 octets) fit.
	ctlMaxData = ctlMaxFragments * 468
)

// Why a mode 6 reply was refused. Each is counted (Ntpd's counters) and ends
// the exchange with one error naming the daemon; the monitor asks again at its
// next poll.
var (
	// ErrNtpdTruncated: a datagram shorter than the header, or whose data is
	// shorter than its count says.
	ErrNtpdTruncated = errors.New("truncated reply")
	// ErrNtpdMalformed: not a mode 6 response to what was asked, fragments
	// that overlap or do not fit, or a variable list that does not parse.
	ErrNtpdMalformed = errors.New("malformed reply")
	// ErrNtpdErrorReply: the daemon answered with the error bit set (its error
	// code is in the message).
	ErrNtpdErrorReply = errors.New("error reply")
	// errCtlStale: a reply for another sequence number (a late answer to an
	// earlier request): skipped and counted, not an error of the exchange.
	errCtlStale = errors.New("reply to another request")
)

// ctlErrorNames are ntpd's mode 6 error codes (CERR_*, the status word's high
// byte of an error reply), as ntpq words them.
var ctlErrorNames = [...]string{"unspecified error", "permission denied", "request badly formatted",
	"unknown opcode", "unknown association", "unknown variable", "invalid value", "access denied (restrict)"}

// ctlErrorName is the name of error code c.
func ctlErrorName(c uint8) string {
	if int(c) < len(ctlErrorNames) {
		return ctlErrorNames[c]
	}
	return "error code " + strconv.Itoa(int(c))
}

// ctlRequest encodes a request without data into b (at least 12 bytes).
// Version 2 is what ntpq sends; ntpd answers versions 1 to 4.
func ctlRequest(b []byte, op uint8, seq, assoc uint16) []byte {
	b = b[:ctlHeaderLen]
	clear(b)
	b[0] = control.MakeVnMode(2, control.Mode)
	b[1] = op & 0x1f
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint16(b[6:], assoc)
	return b
}

// span is the data [off, off+n) of one fragment.
type span struct{ off, n int }

// ctlAssembly reassembles the fragments of the reply to one request, in any
// order, refusing what does not belong to it.
type ctlAssembly struct {
	seq   uint16
	op    uint8
	assoc uint16 // asked association (0: system)

	frags  []span
	data   []byte // reassembled data; len is the farthest end seen
	end    int    // the data's length once the last fragment came, else -1
	status uint16 // status word of the reply
	rassoc uint16 // association the reply is about
}

// reset starts the reassembly of the reply to request (seq, op, assoc),
// keeping the buffers.
func (a *ctlAssembly) reset(seq uint16, op uint8, assoc uint16) {
	a.seq, a.op, a.assoc = seq, op, assoc
	a.frags, a.data, a.end = a.frags[:0], a.data[:0], -1
	a.status, a.rassoc = 0, 0
}

// add takes one datagram. It reports done once every fragment came. A reply
// for another sequence number is errCtlStale (skip it); any other error
// refuses the whole reply.
func (a *ctlAssembly) add(pkt []byte) (done bool, err error) {
	if len(pkt) < ctlHeaderLen {
		return false, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrNtpdTruncated, len(pkt), ctlHeaderLen)
	}
	if mode := pkt[0] & 7; mode != control.Mode {
		return false, fmt.Errorf("%w: mode %d, not a control message", ErrNtpdMalformed, mode)
	}
	rem := pkt[1]
	if rem&0x80 == 0 {
		return false, fmt.Errorf("%w: a request, not a response", ErrNtpdMalformed)
	}
	if seq := binary.BigEndian.Uint16(pkt[2:]); seq != a.seq {
		return false, fmt.Errorf("%w (sequence %d, asked %d)", errCtlStale, seq, a.seq)
	}
	if op := rem & 0x1f; op != a.op {
		return false, fmt.Errorf("%w: opcode %d answers opcode %d", ErrNtpdMalformed, op, a.op)
	}
	status := binary.BigEndian.Uint16(pkt[4:])
	if rem&0x40 != 0 {
		return false, fmt.Errorf("%w: %s (status %#04x)", ErrNtpdErrorReply, ctlErrorName(uint8(status>>8)), status)
	}
	assoc := binary.BigEndian.Uint16(pkt[6:])
	if a.assoc != 0 && assoc != a.assoc {
		return false, fmt.Errorf("%w: answers association %d, asked %d", ErrNtpdMalformed, assoc, a.assoc)
	}
	off, n := int(binary.BigEndian.Uint16(pkt[8:])), int(binary.BigEndian.Uint16(pkt[10:]))
	if n > len(pkt)-ctlHeaderLen {
		return false, fmt.Errorf("%w: declares %d data octets, has %d", ErrNtpdTruncated, n, len(pkt)-ctlHeaderLen)
	}
	if off+n > ctlMaxData {
		return false, fmt.Errorf("%w: fragment data ends at %d, beyond %d", ErrNtpdMalformed, off+n, ctlMaxData)
	}
	if len(a.frags) == ctlMaxFragments {
		return false, fmt.Errorf("%w: more than %d fragments", ErrNtpdMalformed, ctlMaxFragments)
	}
	if len(a.frags) > 0 && (status != a.status || assoc != a.rassoc) {
		return false, fmt.Errorf("%w: fragments disagree on status (%#04x, %#04x) or association (%d, %d)", ErrNtpdMalformed, a.status, status, a.rassoc, assoc)
	}
	for _, f := range a.frags {
		if off < f.off+f.n && f.off < off+n || off == f.off {
			return false, fmt.Errorf("%w: fragment at %d+%d overlaps one at %d+%d", ErrNtpdMalformed, off, n, f.off, f.n)
		}
	}
	more := rem&0x20 != 0
	if !more {
		if a.end >= 0 {
			return false, fmt.Errorf("%w: two last fragments (ending at %d and %d)", ErrNtpdMalformed, a.end, off+n)
		}
		if off+n < len(a.data) {
			return false, fmt.Errorf("%w: last fragment ends at %d, before data at %d", ErrNtpdMalformed, off+n, len(a.data))
		}
		a.end = off + n
	} else if a.end >= 0 && off+n > a.end {
		return false, fmt.Errorf("%w: fragment ends at %d, after the last one (%d)", ErrNtpdMalformed, off+n, a.end)
	}
	a.status, a.rassoc = status, assoc
	a.frags = append(a.frags, span{off, n})
	if off+n > len(a.data) {
		a.data = append(a.data, make([]byte, off+n-len(a.data))...)
	}
	copy(a.data[off:], pkt[ctlHeaderLen:ctlHeaderLen+n])
	if a.end < 0 {
		return false, nil
	}
	have := 0
	for _, f := range a.frags {
		have += f.n
	}
	return have == a.end, nil
}

// missing describes what an incomplete reply lacks, for a timeout's error.
func (a *ctlAssembly) missing() string {
	if len(a.frags) == 0 {
		return "no reply"
	}
	if a.end < 0 {
		return fmt.Sprintf("incomplete reply: %d fragments, not the last", len(a.frags))
	}
	have := 0
	for _, f := range a.frags {
		have += f.n
	}
	return fmt.Sprintf("incomplete reply: %d fragments, %d of %d octets", len(a.frags), have, a.end)
}

// ctlVar is one name=value of a variable list (value "" for a bare name).
type ctlVar struct{ name, value string }

// parseCtlVars splits a mode 6 variable list as ntpq reads it: items
// separated by commas (outside double quotes), whitespace and line breaks
// around them ignored, a quoted value taken without its quotes; a name may
// come without a value. It never fails: an item that is not clean text
// (bytes other than printable ASCII and tab inside it), has an empty or spaced
// name, or an unbalanced quote is skipped and counted in garbled. NTPsec
// 1.2.2 sends such items: its filtdelay, filtoffset and filtdisp arrays carry
// bytes of uninitialised memory (see testdata/ntpsec-1.2.2.mode6).
func parseCtlVars(data []byte, out []ctlVar) (vars []ctlVar, garbled int) {
	for len(data) > 0 {
		end, quoted := 0, false
		for end < len(data) && (quoted || data[end] != ',') {
			if data[end] == '"' {
				quoted = !quoted
			}
			end++
		}
		item := data[:end]
		if end < len(data) {
			end++ // the comma
		}
		data = data[end:]
		item = trimSpace(item)
		if len(item) == 0 {
			continue
		}
		v, ok := ctlItem(item)
		if !ok {
			garbled++
			continue
		}
		out = append(out, v)
	}
	return out, garbled
}

// trimSpace trims spaces, tabs and line breaks.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// ctlItem parses one trimmed item, name or name=value; ok is false when it is
// not clean text (line breaks come only between items).
func ctlItem(item []byte) (ctlVar, bool) {
	for _, c := range item {
		if (c < 0x20 && c != '\t') || c >= 0x7f {
			return ctlVar{}, false
		}
	}
	name, value := item, []byte(nil)
	if i := bytes.IndexByte(item, '='); i >= 0 {
		name, value = trimSpace(item[:i]), trimSpace(item[i+1:])
	}
	if len(name) == 0 || bytes.ContainsAny(name, " \t\r\n\"") {
		return ctlVar{}, false
	}
	if q := bytes.Count(value, []byte{'"'}); q > 0 {
		if q != 2 || value[0] != '"' || value[len(value)-1] != '"' {
			return ctlVar{}, false
		}
		value = value[1 : len(value)-1]
	}
	return ctlVar{string(name), string(value)}, true
}

// varReader converts variables to integer units, keeping the first error.
type varReader struct {
	vars []ctlVar
	what string // "system variables", "association 3"
	err  error
}

func (r *varReader) get(name string, required bool) (string, bool) {
	for i := len(r.vars) - 1; i >= 0; i-- { // the last of a name given twice
		if r.vars[i].name == name {
			return r.vars[i].value, true
		}
	}
	if required && r.err == nil {
		r.err = fmt.Errorf("%w: %s lack %s", ErrNtpdMalformed, r.what, name)
	}
	return "", false
}

func (r *varReader) fail(name, v string, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s=%q: %v", ErrNtpdMalformed, r.what, name, v, err)
	}
}

// int reads a decimal integer, or a hexadecimal one written 0x….
func (r *varReader) int(name string, required bool) int64 {
	v, ok := r.get(name, required)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 0, 64)
	if err != nil {
		r.fail(name, v, errors.Unwrap(err))
	}
	return n
}

// scaled reads a decimal number of a unit and returns it in units/scale
// (milliseconds to ns: 1e6; ppm to ppb: 1e3), rounded to the nearest.
func (r *varReader) scaled(name string, required bool, scale float64) int64 {
	v, ok := r.get(name, required)
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (math.IsNaN(f) || math.Abs(f*scale) >= 1<<62) {
		err = errors.New("out of range")
	}
	if err != nil {
		r.fail(name, v, errors.Unwrap(err))
		return 0
	}
	return int64(math.Round(f * scale))
}

// leap reads a leap indicator: ntpd writes the two bits ("00".."11"),
// older daemons a number 0..3.
func (r *varReader) leap(name string) int64 {
	v, ok := r.get(name, true)
	if !ok {
		return 0
	}
	base := 10
	if len(v) == 2 {
		base = 2
	}
	n, err := strconv.ParseUint(v, base, 8)
	if err == nil && n > 3 {
		err = errors.New("out of range")
	}
	if err != nil {
		r.fail(name, v, err)
	}
	return int64(n)
}

// timestamp reads an NTP timestamp as ntpd writes it (0xSSSSSSSS.FFFFFFFF,
// hexadecimal seconds since 1900 and fraction) as Unix ns; 0 stays 0 (never).
func (r *varReader) timestamp(name string, required bool) int64 {
	v, ok := r.get(name, required)
	if !ok {
		return 0
	}
	sec, frac, _ := strings.Cut(strings.TrimPrefix(v, "0x"), ".")
	s, err1 := strconv.ParseUint(sec, 16, 32)
	f, err2 := strconv.ParseUint(frac, 16, 32)
	if err1 != nil || err2 != nil || len(sec) == 0 || len(frac) == 0 {
		r.fail(name, v, errors.New("not an NTP timestamp"))
		return 0
	}
	if s == 0 && f == 0 {
		return 0
	}
	// NTP era 0 before 2036, era 1 after (seconds below 1968's).
	unix := int64(s) - ntpEpochOffset
	if s < 0x80000000 {
		unix += 1 << 32
	}
	return unix*1e9 + int64((f*1e9+(1<<31))>>32)
}

// ntpEpochOffset is 1970 − 1900 in seconds.
const ntpEpochOffset = 2208988800

// Synced says whether ntpd is synchronised: leap indicator not 3 (alarm)
// and a system peer selected.
func (s *NtpdSystem) Synced() bool { return s.Leap != 3 && s.SysPeer != 0 }

// NtpdSystem is ntpd's system variables (ntpq rv) in integer units. Offsets,
// delays, dispersions and jitters in ns (ntpd's milliseconds, rounded),
// frequencies in ppb (its ppm).
type NtpdSystem struct {
	TimeNS int64  // REALTIME when the reply arrived
	Status uint16 // the system status word
	// Leap is the leap indicator: 3 (binary 11, "alarm") while ntpd is not
	// synchronised.
	Leap, Stratum, Precision int64
	RootDelayNS, RootDispNS  int64
	RefID                    string
	RefTimeNS                int64  // Unix ns of the last update; 0: never
	SysPeer                  uint16 // association of the system peer; 0: none
	// OffsetNS is the offset of the last clock update (0 while ntpd does
	// not discipline the clock: disable ntp).
	OffsetNS, SysJitterNS, ClkJitterNS int64
	FreqPPB, ClkWanderPPB              int64
	TC, MinTC                          int64 // time constant (poll exponents)
	TAI                                int64 // TAI − UTC in s; HasTAI says whether ntpd sent it
	HasTAI                             bool
	Version                            string
	// Garbled is how many items of the reply's variable list were skipped
	// as not clean text (parseCtlVars).
	Garbled int
}

// NtpdPeer is one of ntpd's associations (ntpq rv ASSOC) in integer units.
type NtpdPeer struct {
	TimeNS      int64 // REALTIME when the reply arrived
	Association uint16
	Status      uint16 // the peer status word
	// Selection is the peer status word's selection code (0..7), SelectionName its
	// name as ntpq prints it (reject … sys.peer, pps.peer).
	Selection             uint8
	SelectionName         string
	Configured, Reachable bool
	Address               string // srcadr
	SrcPort               int64
	Leap, Stratum         int64
	Precision             int64
	HMode, PMode          int64
	HPoll, PPoll          int64 // poll exponents (log2 s) of ntpd and of the peer
	Reach                 int64 // reachability register, 8 bits
	Unreach               int64
	RootDelayNS           int64
	RootDispNS            int64
	RefID                 string
	OffsetNS, DelayNS     int64
	DispersionNS          int64
	JitterNS              int64
	Flash                 int64 // flash bits (tests failed by the last packet)
	Garbled               int   // items of the reply skipped as not clean text
}

// selectionNames are the peer selection codes as ntpsec's ntpq prints them.
var selectionNames = [8]string{"reject", "falsetick", "excess", "outlier", "candidate", "backup", "sys.peer", "pps.peer"}

// systemOf decodes the variables of the reply to READVAR association 0.
func systemOf(status uint16, vars []ctlVar) (NtpdSystem, error) {
	r := varReader{vars: vars, what: "system variables"}
	s := NtpdSystem{
		Status: status, Leap: r.leap("leap"), Stratum: r.int("stratum", true), Precision: r.int("precision", true),
		RootDelayNS: r.scaled("rootdelay", true, 1e6), RootDispNS: r.scaled("rootdisp", true, 1e6),
		RefTimeNS: r.timestamp("reftime", true),
		OffsetNS:  r.scaled("offset", true, 1e6), SysJitterNS: r.scaled("sys_jitter", true, 1e6),
		ClkJitterNS: r.scaled("clk_jitter", true, 1e6),
		FreqPPB:     r.scaled("frequency", true, 1e3), ClkWanderPPB: r.scaled("clk_wander", true, 1e3),
		TC: r.int("tc", true), MinTC: r.int("mintc", false),
	}
	s.RefID, _ = r.get("refid", true)
	s.Version, _ = r.get("version", false)
	if _, ok := r.get("tai", false); ok {
		s.TAI, s.HasTAI = r.int("tai", false), true
	}
	peer := r.int("peer", true)
	if peer < 0 || peer > math.MaxUint16 {
		r.fail("peer", strconv.FormatInt(peer, 10), errors.New("not an association"))
	}
	s.SysPeer = uint16(peer)
	return s, r.err
}

// peerOf decodes the variables of the reply to READVAR association id.
func peerOf(id, status uint16, vars []ctlVar) (NtpdPeer, error) {
	r := varReader{vars: vars, what: "association " + strconv.Itoa(int(id))}
	psw := control.ReadPeerStatusWord(status)
	p := NtpdPeer{
		Association: id, Status: status, Selection: psw.PeerSelection, SelectionName: selectionNames[psw.PeerSelection&7],
		Configured: psw.PeerStatus.Configured, Reachable: psw.PeerStatus.Reachable,
		SrcPort: r.int("srcport", false), Leap: r.leap("leap"), Stratum: r.int("stratum", true),
		Precision: r.int("precision", false), HMode: r.int("hmode", false), PMode: r.int("pmode", false),
		HPoll: r.int("hpoll", true), PPoll: r.int("ppoll", false), Unreach: r.int("unreach", false),
		RootDelayNS: r.scaled("rootdelay", false, 1e6), RootDispNS: r.scaled("rootdisp", false, 1e6),
		OffsetNS: r.scaled("offset", true, 1e6), DelayNS: r.scaled("delay", true, 1e6),
		DispersionNS: r.scaled("dispersion", true, 1e6), JitterNS: r.scaled("jitter", true, 1e6),
		Flash: r.int("flash", false),
	}
	p.Address, _ = r.get("srcadr", true)
	p.RefID, _ = r.get("refid", false)
	// reach is the 8-bit register in hexadecimal (0xff) or octal (377) as
	// ntpq shows it.
	if v, ok := r.get("reach", true); ok {
		n, err := strconv.ParseUint(v, 0, 8)
		if err != nil {
			n, err = strconv.ParseUint(v, 8, 8)
		}
		if err != nil {
			r.fail("reach", v, errors.New("not an 8-bit register"))
		}
		p.Reach = int64(n)
	}
	return p, r.err
}

// associationsOf decodes the reply to READSTAT: (association, peer status)
// pairs.
func associationsOf(data []byte) ([][2]uint16, error) {
	if len(data)%4 != 0 {
		return nil, fmt.Errorf("%w: association list of %d octets, not pairs of 16-bit words", ErrNtpdMalformed, len(data))
	}
	out := make([][2]uint16, 0, len(data)/4)
	for i := 0; i+4 <= len(data); i += 4 {
		id := binary.BigEndian.Uint16(data[i:])
		if id == 0 {
			return nil, fmt.Errorf("%w: association 0 in the association list", ErrNtpdMalformed)
		}
		out = append(out, [2]uint16{id, binary.BigEndian.Uint16(data[i+2:])})
	}
	return out, nil
}
