package gnss

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
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
	switch string(cls) {
	case "TPV":
		m.Class = ClassTPV
		return d.tpv(&ms, m)
	case "SKY":
		m.Class = ClassSKY
		return d.sky(&ms, m)
	case "TOFF":
		m.Class = ClassTOFF
		return d.toff(&ms, m)
	case "PPS":
		m.Class = ClassPPS
		return d.toff(&ms, m)
	case "VERSION":
		m.Class = ClassVersion
	case "DEVICES":
		m.Class = ClassDevices
	case "DEVICE":
		m.Class = ClassDevice
	case "WATCH":
		m.Class = ClassWatch
	case "ERROR":
		m.Class = ClassError
	default:
		return &LineError{Err: ErrUnknownClass, Class: string(cls)}
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

// stamp is sec·1e9 + nsec from two JSON integers; nsec in [0, 1e9).
func stamp(sec, nsec []byte) (int64, error) {
	if sec == nil || nsec == nil {
		return 0, errors.New("missing")
	}
	s, err := integer(sec)
	if err != nil {
		return 0, err
	}
	n, err := integer(nsec)
	if err != nil {
		return 0, err
	}
	if n < 0 || n >= 1e9 {
		return 0, fmt.Errorf("nanoseconds %d out of [0, 1e9)", n)
	}
	if s < 0 || s > (1<<63-1-n)/1e9 {
		return 0, fmt.Errorf("seconds %d out of range", s)
	}
	return s*1e9 + n, nil
}

// integer parses a JSON number that is an integer (no fraction, no
// exponent) into an int64.
func integer(v []byte) (int64, error) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 {
		return 0, errors.New("empty number")
	}
	var n uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%q is no integer", v)
		}
		if n > (1<<63)/10 {
			return 0, fmt.Errorf("%q overflows", v)
		}
		n = n*10 + uint64(c-'0')
	}
	switch {
	case neg && n <= 1<<63:
		return int64(-n), nil
	case !neg && n < 1<<63:
		return int64(n), nil
	}
	return 0, fmt.Errorf("%q overflows", v)
}

// float parses a JSON number (not a time: positions and heights).
func float(v []byte) (float64, error) {
	if len(v) == 0 || v[0] != '-' && (v[0] < '0' || v[0] > '9') {
		return 0, fmt.Errorf("%q is no number", v)
	}
	// A conversion that does not escape and is at most 32 bytes long is
	// made on the stack: no allocation.
	return strconv.ParseFloat(string(v), 64)
}

// decimalNS parses a JSON number of seconds into ns, digit by digit,
// truncating below 1 ns. An exponent is allowed; the value must fit.
func decimalNS(v []byte) (int64, error) {
	s := scanner{b: v}
	neg := s.eat('-')
	// The mantissa's digits, and the power of ten of its last digit.
	var mant uint64
	exp10, digits := 0, 0
	take := func(c byte, frac bool) {
		switch {
		case digits < 18:
			mant = mant*10 + uint64(c-'0')
			if mant != 0 {
				digits++
			}
			if frac {
				exp10--
			}
		case !frac:
			exp10++ // an integer digit beyond what fits: kept as a power of ten
		}
		// A fraction digit beyond 18 significant ones is below 1 ns.
	}
	n := 0
	for ; s.i < len(v) && isDigit(v[s.i]); s.i++ {
		take(v[s.i], false)
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("%q is no number", v)
	}
	if s.eat('.') {
		n = 0
		for ; s.i < len(v) && isDigit(v[s.i]); s.i++ {
			take(v[s.i], true)
			n++
		}
		if n == 0 {
			return 0, fmt.Errorf("%q is no number", v)
		}
	}
	if s.i < len(v) && (v[s.i] == 'e' || v[s.i] == 'E') {
		s.i++
		eneg := false
		if s.i < len(v) && (v[s.i] == '+' || v[s.i] == '-') {
			eneg = v[s.i] == '-'
			s.i++
		}
		e, n := 0, 0
		for ; s.i < len(v) && isDigit(v[s.i]); s.i++ {
			if e < 10000 {
				e = e*10 + int(v[s.i]-'0')
			}
			n++
		}
		if n == 0 {
			return 0, fmt.Errorf("%q is no number", v)
		}
		if eneg {
			e = -e
		}
		exp10 += e
	}
	if s.i != len(v) {
		return 0, fmt.Errorf("%q is no number", v)
	}
	// value = mant · 10^exp10 s = mant · 10^(exp10+9) ns
	p := exp10 + 9
	x := mant
	for ; p < 0 && x != 0; p++ {
		x /= 10
	}
	for ; p > 0 && x != 0; p-- {
		if x > (1<<63-1)/10 {
			return 0, fmt.Errorf("%q s does not fit in int64 ns", v)
		}
		x *= 10
	}
	if neg {
		return -int64(x), nil
	}
	return int64(x), nil
}

// ParseTime parses gpsd's ISO-8601 UTC time, "2006-01-02T15:04:05.000Z"
// (the fraction optional, of any length; digits beyond ns truncated), into
// ns since the Unix epoch. Years 1970 to 2261 fit.
func ParseTime(t []byte) (int64, error) {
	bad := func(why string) (int64, error) { return 0, fmt.Errorf("time %q: %s", t, why) }
	if len(t) < 20 || t[4] != '-' || t[7] != '-' || t[10] != 'T' || t[13] != ':' || t[16] != ':' || t[len(t)-1] != 'Z' {
		return bad("not YYYY-MM-DDTHH:MM:SS[.fff]Z")
	}
	num := func(b []byte) int {
		n := 0
		for _, c := range b {
			if !isDigit(c) {
				return -1
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(t[0:4]), num(t[5:7]), num(t[8:10])
	hour, minute, sec := num(t[11:13]), num(t[14:16]), num(t[17:19])
	if year < 1970 || year > 2261 || month < 1 || month > 12 || day < 1 ||
		day > daysIn(year, month) || hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 60 {
		return bad("a field is out of range")
	}
	var frac int64
	rest := t[19 : len(t)-1]
	if len(rest) > 0 {
		if rest[0] != '.' || len(rest) == 1 {
			return bad("malformed fraction")
		}
		scale := int64(1e8)
		for _, c := range rest[1:] {
			if !isDigit(c) {
				return bad("malformed fraction")
			}
			frac += int64(c-'0') * scale
			scale /= 10
		}
	}
	// time.Date allocates nothing; a leap second (:60) is the next
	// minute's first second, as POSIX time counts it.
	return time.Date(year, time.Month(month), day, hour, minute, sec, 0, time.UTC).UnixNano() + frac, nil
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func garbage(at int, class, reason string) error {
	return &LineError{Err: ErrGarbage, Class: class, Reason: reason, Offset: at}
}
