package gnss

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Class is a gpsd message's "class".
type Class uint8

const (
	ClassUnknown Class = iota
	ClassTPV           // time-position-velocity: the fix
	ClassSKY           // satellites
	ClassTOFF          // the receiver's time against the system clock, per cycle
	ClassPPS           // a PPS edge against the system clock
	ClassVersion       // VERSION, on connect
	ClassDevices       // DEVICES, the devices gpsd knows
	ClassDevice        // DEVICE, one device activated or changed
	ClassWatch         // WATCH, the watch policy in force
	ClassError         // ERROR, gpsd refused a command
)

var classNames = [...]string{"", "TPV", "SKY", "TOFF", "PPS", "VERSION", "DEVICES", "DEVICE", "WATCH", "ERROR"}

func (c Class) String() string {
	if int(c) < len(classNames) && c != ClassUnknown {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// classOf is the class gpsd names name, ClassUnknown for one this package
// does not know.
func classOf(name []byte) Class {
	for c := ClassTPV; int(c) < len(classNames); c++ {
		if string(name) == classNames[c] {
			return c
		}
	}
	return ClassUnknown
}

// Logged reports whether the class is one whose message is only worth a log
// line (Message.Text): VERSION, DEVICES, DEVICE, WATCH, ERROR.
func (c Class) Logged() bool { return c >= ClassVersion && c <= ClassError }

// Mode is TPV's fix mode.
type Mode int8

const (
	ModeUnknown Mode = 0 // gpsd has seen no mode yet
	ModeNoFix   Mode = 1
	Mode2D      Mode = 2
	Mode3D      Mode = 3
)

// Has says which optional members a Message carries.
type Has uint16

const (
	HasTime      Has = 1 << iota // TPV "time"
	HasEpt                       // TPV "ept"
	HasLat                       // TPV "lat"
	HasLon                       // TPV "lon"
	HasAlt                       // TPV "altHAE", else "alt"
	HasSeen                      // SKY "nSat", else the satellites listed
	HasUsed                      // SKY "uSat", else the satellites listed as used
	HasPrecision                 // TOFF, PPS "precision"
	HasQErr                      // PPS "qErr"
)

// Message is one decoded gpsd line. Only the members of its class are set;
// the optional ones are listed in Has.
type Message struct {
	Class Class
	Mode  Mode // TPV
	// Precision is TOFF's and PPS's "precision": log2 of the stamp's
	// precision in seconds (-20 is about 1 µs).
	Precision int8
	Has       Has
	Seen      int16  // SKY: satellites seen
	Used      int16  // SKY: satellites used in the fix
	Device    string // "device" ("path" for DEVICE); "" when absent

	TimeNS  int64 // TPV "time": the fix's UTC time, ns since the Unix epoch
	EptNS   int64 // TPV "ept": estimated time error, ns
	RealNS  int64 // TOFF, PPS real_sec/real_nsec: the receiver's UTC time, ns since the epoch
	ClockNS int64 // TOFF, PPS clock_sec/clock_nsec: the system clock's (REALTIME) stamp of it
	QErrPS  int64 // PPS "qErr": the receiver's quantization error of the pulse, ps

	Lat, Lon float64 // TPV, degrees (WGS84)
	AltM     float64 // TPV "altHAE" (height above the ellipsoid), else "alt", metres

	// Text is the line itself for the logged classes (Class.Logged), at
	// most MaxText bytes.
	Text string
}

// OffsetNS is a TOFF's or PPS's clock − real: how far the system clock is
// ahead of the receiver's time at the stamp (for TOFF this includes the
// delay of the sentence that carried it).
func (m *Message) OffsetNS() int64 { return m.ClockNS - m.RealNS }

// MaxText is the most of a logged line Message.Text keeps.
const MaxText = 512

var (
	// ErrGarbage: the line is no JSON object with a string "class", or a
	// member of its class is malformed.
	ErrGarbage = errors.New("not a gpsd JSON message")
	// ErrUnknownClass: a well-formed object of a class this package does
	// not decode.
	ErrUnknownClass = errors.New("unknown gpsd class")
)

// LineError is a line that could not be decoded; Err is ErrGarbage or
// ErrUnknownClass. The stream goes on after it.
type LineError struct {
	Err    error
	Reason string // what was wrong ("" for an unknown class)
	Class  string // the class named, when it got that far
	Offset int    // the byte of the line where decoding stopped
}

func (e *LineError) Error() string {
	if errors.Is(e.Err, ErrUnknownClass) {
		return fmt.Sprintf("gpsd line: %v %q", e.Err, e.Class)
	}
	if e.Class != "" {
		return fmt.Sprintf("gpsd line: %v: %s: %s at byte %d", e.Err, e.Class, e.Reason, e.Offset)
	}
	return fmt.Sprintf("gpsd line: %v: %s at byte %d", e.Err, e.Reason, e.Offset)
}

func (e *LineError) Unwrap() error { return e.Err }

// Decoder decodes gpsd lines. It keeps the last device path it saw, so
// that decoding the lines of a known device allocates nothing. Its zero
// value is ready; it is not safe for concurrent use.
type Decoder struct {
	device  string
	scratch []byte // unescaped strings
}

// members are the spans of the members a line may have: each the value's
// bytes as written (strings with their quotes), nil when absent.
type members struct {
	class, device, path, mode, time, ept, lat, lon, alt, altHAE []byte
	nSat, uSat, satellites                                      []byte
	realSec, realNsec, clockSec, clockNsec, precision, qErr     []byte
}

// Decode decodes one line (without its newline; a trailing \r is allowed)
// into m, which it overwrites. A line it cannot decode is a *LineError.
func (d *Decoder) Decode(line []byte, m *Message) error {
	*m = Message{}
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	var ms members
	s := scanner{b: line}
	s.ws()
	if !s.eat('{') {
		return garbage(s.i, "", "not a JSON object")
	}
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			ks := s.i
			if err := s.str(); err != nil {
				return garbage(s.i, "", "member name: "+err.Error())
			}
			key := line[ks:s.i]
			s.ws()
			if !s.eat(':') {
				return garbage(s.i, "", "missing ':'")
			}
			s.ws()
			vs := s.i
			if err := s.value(0); err != nil {
				return garbage(s.i, "", err.Error())
			}
			d.member(key, line[vs:s.i], &ms)
			s.ws()
			if s.eat(',') {
				continue
			}
			if s.eat('}') {
				break
			}
			return garbage(s.i, "", "missing ',' or '}'")
		}
	}
	s.ws()
	if s.i != len(line) {
		return garbage(s.i, "", "text after the object")
	}
	if ms.class == nil {
		return garbage(0, "", "no class")
	}
	cls, ok := d.text(ms.class)
	if !ok {
		return garbage(0, "", "class is no string")
	}
	c := classOf(cls)
	if c == ClassUnknown {
		return &LineError{Err: ErrUnknownClass, Class: string(cls)}
	}
	m.Class = c
	switch c {
	case ClassTPV:
		return d.tpv(&ms, m)
	case ClassSKY:
		return d.sky(&ms, m)
	case ClassTOFF, ClassPPS:
		return d.toff(&ms, m)
	}
	if m.Class == ClassDevice && ms.path != nil {
		if err := d.setDevice(ms.path, m); err != nil {
			return garbage(0, "DEVICE", "path: "+err.Error())
		}
	}
	m.Text = string(line[:min(len(line), MaxText)])
	return nil
}

// member keeps the span of a member the classes use. The names gpsd
// writes have no escapes; one that has them is compared unescaped.
func (d *Decoder) member(key, v []byte, ms *members) {
	k, ok := d.text(key)
	if !ok {
		return
	}
	var p *[]byte
	switch string(k) {
	case "class":
		p = &ms.class
	case "device":
		p = &ms.device
	case "path":
		p = &ms.path
	case "mode":
		p = &ms.mode
	case "time":
		p = &ms.time
	case "ept":
		p = &ms.ept
	case "lat":
		p = &ms.lat
	case "lon":
		p = &ms.lon
	case "alt":
		p = &ms.alt
	case "altHAE":
		p = &ms.altHAE
	case "nSat":
		p = &ms.nSat
	case "uSat":
		p = &ms.uSat
	case "satellites":
		p = &ms.satellites
	case "real_sec":
		p = &ms.realSec
	case "real_nsec":
		p = &ms.realNsec
	case "clock_sec":
		p = &ms.clockSec
	case "clock_nsec":
		p = &ms.clockNsec
	case "precision":
		p = &ms.precision
	case "qErr":
		p = &ms.qErr
	default:
		return
	}
	*p = v // a member given twice: the last one counts, as in encoding/json
}

// text is the content of a JSON string span, unescaped (into the
// decoder's scratch, valid until the next call) when it has escapes or
// invalid UTF-8;
// false when the span is no string.
func (d *Decoder) text(v []byte) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' {
		return nil, false
	}
	in := v[1 : len(v)-1]
	if bytes.IndexByte(in, '\\') >= 0 || !utf8.Valid(in) {
		var ok bool
		d.scratch, ok = unquote(d.scratch[:0], in)
		return d.scratch, ok
	}
	return in, true
}

// setDevice sets m.Device from a string span, reusing the last path seen.
func (d *Decoder) setDevice(v []byte, m *Message) error {
	t, ok := d.text(v)
	if !ok {
		return errors.New("not a string")
	}
	if string(t) != d.device {
		d.device = string(t)
	}
	m.Device = d.device
	return nil
}

func (d *Decoder) common(cls string, ms *members, m *Message) error {
	if ms.device == nil {
		return nil
	}
	if err := d.setDevice(ms.device, m); err != nil {
		return garbage(0, cls, "device: "+err.Error())
	}
	return nil
}

func (d *Decoder) tpv(ms *members, m *Message) error {
	if err := d.common("TPV", ms, m); err != nil {
		return err
	}
	if ms.mode != nil {
		n, err := integer(ms.mode)
		if err != nil || n < 0 || n > 3 {
			return garbage(0, "TPV", fmt.Sprintf("mode %q is not 0 to 3", ms.mode))
		}
		m.Mode = Mode(n)
	}
	if ms.time != nil {
		t, ok := d.text(ms.time)
		if !ok {
			return garbage(0, "TPV", "time is no string")
		}
		ns, err := ParseTime(t)
		if err != nil {
			return garbage(0, "TPV", err.Error())
		}
		m.TimeNS, m.Has = ns, m.Has|HasTime
	}
	if ms.ept != nil {
		ns, err := decimalNS(ms.ept)
		if err != nil || ns < 0 {
			return garbage(0, "TPV", fmt.Sprintf("ept %q is no duration in seconds", ms.ept))
		}
		m.EptNS, m.Has = ns, m.Has|HasEpt
	}
	alt := ms.altHAE
	if alt == nil {
		alt = ms.alt
	}
	for _, f := range []struct {
		v    []byte
		dst  *float64
		has  Has
		name string
	}{{ms.lat, &m.Lat, HasLat, "lat"}, {ms.lon, &m.Lon, HasLon, "lon"}, {alt, &m.AltM, HasAlt, "alt"}} {
		if f.v == nil {
			continue
		}
		x, err := float(f.v)
		if err != nil {
			return garbage(0, "TPV", f.name+": "+err.Error())
		}
		*f.dst, m.Has = x, m.Has|f.has
	}
	return nil
}

func (d *Decoder) sky(ms *members, m *Message) error {
	if err := d.common("SKY", ms, m); err != nil {
		return err
	}
	seen, used := -1, -1
	if ms.satellites != nil && len(ms.satellites) > 0 && ms.satellites[0] == '[' {
		var err error
		if seen, used, err = d.satellites(ms.satellites); err != nil {
			return garbage(0, "SKY", "satellites: "+err.Error())
		}
	}
	var err error
	if seen, err = count("nSat", ms.nSat, seen); err != nil {
		return err
	}
	if used, err = count("uSat", ms.uSat, used); err != nil {
		return err
	}
	if seen >= 0 {
		m.Seen, m.Has = int16(min(seen, 1<<15-1)), m.Has|HasSeen
	}
	if used >= 0 {
		m.Used, m.Has = int16(min(used, 1<<15-1)), m.Has|HasUsed
	}
	return nil
}

// count is SKY's count member name (v), or def when absent.
func count(name string, v []byte, def int) (int, error) {
	if v == nil {
		return def, nil
	}
	x, err := integer(v)
	if err != nil || x < 0 || x > 1<<15-1 {
		return 0, garbage(0, "SKY", fmt.Sprintf("%s %q is no count", name, v))
	}
	return int(x), nil
}

// satellites counts the entries of SKY's satellites array and those with
// "used":true. The span is known to be valid JSON.
func (d *Decoder) satellites(v []byte) (seen, used int, err error) {
	s := scanner{b: v}
	s.eat('[')
	s.ws()
	if s.eat(']') {
		return 0, 0, nil
	}
	for {
		s.ws()
		seen++
		if s.peek() != '{' {
			return 0, 0, errors.New("an entry is no object")
		}
		s.eat('{')
		s.ws()
		if !s.eat('}') {
			for {
				s.ws()
				ks := s.i
				s.str()
				key := v[ks:s.i]
				s.ws()
				s.eat(':')
				s.ws()
				vs := s.i
				s.value(1)
				if k, ok := d.text(key); ok && string(k) == "used" && string(v[vs:s.i]) == "true" {
					used++
				}
				s.ws()
				if !s.eat(',') {
					s.eat('}')
					break
				}
			}
		}
		s.ws()
		if !s.eat(',') {
			return seen, used, nil
		}
	}
}

// toff decodes TOFF and PPS: four integers, and the optional precision
// and qErr.
func (d *Decoder) toff(ms *members, m *Message) error {
	cls := m.Class.String()
	if err := d.common(cls, ms, m); err != nil {
		return err
	}
	var err error
	if m.RealNS, err = stamp(ms.realSec, ms.realNsec); err != nil {
		return garbage(0, cls, "real_sec/real_nsec: "+err.Error())
	}
	if m.ClockNS, err = stamp(ms.clockSec, ms.clockNsec); err != nil {
		return garbage(0, cls, "clock_sec/clock_nsec: "+err.Error())
	}
	if ms.precision != nil {
		p, err := integer(ms.precision)
		if err != nil || p < -128 || p > 127 {
			return garbage(0, cls, fmt.Sprintf("precision %q is no exponent", ms.precision))
		}
		m.Precision, m.Has = int8(p), m.Has|HasPrecision
	}
	if ms.qErr != nil {
		q, err := integer(ms.qErr)
		if err != nil {
			return garbage(0, cls, fmt.Sprintf("qErr %q is no integer", ms.qErr))
		}
		m.QErrPS, m.Has = q, m.Has|HasQErr
	}
	return nil
}

func garbage(at int, class, reason string) error {
	return &LineError{Err: ErrGarbage, Class: class, Reason: reason, Offset: at}
}
