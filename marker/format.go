package marker

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Limits of the format. They bound what one line can add to the agent's
// output: one record with at most MaxTags tags of bounded length.
const (
	MaxLen         = 512 // bytes in a line, its newline excluded
	MaxNameLen     = 64  // bytes in a name
	MaxTags        = 4   // tags in a line
	MaxTagKeyLen   = 32  // bytes in a tag key
	MaxTagValueLen = 64  // bytes in a tag value
)

// Clock is the clock of a sender's own stamp.
type Clock uint8

// The clocks a sender may stamp a marker with.
const (
	ClockNone      Clock = iota // no sender stamp: the agent's arrival stamp is the marker's time
	ClockMonotonic              // mono=<ns>: CLOCK_MONOTONIC
	ClockRealtime               // rt=<ns>: CLOCK_REALTIME
)

var clockNames = [...]string{ClockNone: "none", ClockMonotonic: "monotonic", ClockRealtime: "realtime"}

// String is the clock's name as the agent ships it: none, monotonic, realtime.
func (c Clock) String() string {
	if c < Clock(len(clockNames)) {
		return clockNames[c]
	}
	return "clock(" + strconv.Itoa(int(c)) + ")"
}

// key is the line's key of a stamp of the clock.
func (c Clock) key() string {
	if c == ClockMonotonic {
		return "mono"
	}
	return "rt"
}

// TrueClock is the time API section (package timeapi, docs/timeapi.md) a
// sender read the true time of its event from: the marker then carries the
// interval's midpoint and half-width as the application read them at the
// event, so that the event reaches the records with its own bound.
type TrueClock uint8

// The time API's sections a marker may carry a true stamp of.
const (
	TrueNone   TrueClock = iota // no true stamp
	TrueSystem                  // utc=<ns> utc_bound=<ns>: section "system", the board's true UTC
	TrueGlobal                  // global=<ns> global_bound=<ns>: section "global", the HCA global timeline
)

var trueKeys = [...]string{TrueNone: "", TrueSystem: "utc", TrueGlobal: "global"}

// String is the section's name: none, system, global.
func (c TrueClock) String() string {
	return [...]string{"none", "system", "global", "unknown"}[min(int(c), 3)]
}

// Tag is one key=value tag of a marker.
type Tag struct{ Key, Value string }

// Marker is one application marker. It is comparable and of fixed size (its
// tags are an array), so that it can sit in a ring without pointers to
// per-marker allocations.
type Marker struct {
	Name     string
	HasValue bool
	Value    float64 // finite; shipped as a float field
	Clock    Clock   // the clock of StampNS; ClockNone for no sender stamp
	StampNS  int64   // the sender's stamp in ns of Clock, >= 0
	NumTags  int
	Tags     [MaxTags]Tag // Tags[:NumTags] are set, in the line's order
	// True is the time API section of the sender's true stamp (TrueNone:
	// none); TrueNS its interval's midpoint, TrueBoundNS its half-width,
	// both >= 0, as read by the application at the event (Client.SendTrue).
	True        TrueClock
	TrueNS      int64
	TrueBoundNS int64
}

// TagList returns the marker's tags.
func (m *Marker) TagList() []Tag { return m.Tags[:m.NumTags] }

// AddTag adds a tag, checking it as Parse would.
func (m *Marker) AddTag(key, value string) error {
	if err := m.checkTag(key, value); err != nil {
		return err
	}
	m.Tags[m.NumTags] = Tag{key, value}
	m.NumTags++
	return nil
}

// ErrSyntax is what every *Error wraps: errors.Is(err, ErrSyntax) tells a
// malformed marker from other failures.
var ErrSyntax = errors.New("malformed marker")

// Error is a marker that does not follow the format: Field names the part
// of the line (line, name, value, mono, rt, stamp, tags, tag <key>, field)
// and Problem what is wrong with it.
type Error struct {
	Field   string
	Problem string
}

func (e *Error) Error() string { return "marker: " + e.Field + ": " + e.Problem }

// Unwrap returns ErrSyntax.
func (e *Error) Unwrap() error { return ErrSyntax }

func errorf(field, format string, a ...any) error {
	return &Error{Field: field, Problem: fmt.Sprintf(format, a...)}
}

// quote shows a piece of a bad line in an error, shortened.
func quote[T ~string | ~[]byte](s T) string {
	const max = 40
	if len(s) > max {
		return strconv.Quote(string(s[:max])) + "…"
	}
	return strconv.Quote(string(s))
}

// reserved reports the tag keys a marker may not use: the agent's own tags,
// the line's keys and the record's field names.
func reserved[T ~string | ~[]byte](k T) bool {
	switch string(k) {
	case "name", "host", "value", "mono", "rt", "time",
		"arrival_ns", "sender_ns", "sender_clock", "uncertainty_ns",
		"utc", "utc_bound", "global", "global_bound", "utc_ns", "utc_bound_ns",
		"global_ns", "global_bound_ns", "global_stamp", "hca_local_ns":
		return true
	}
	return false
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validName: 1..MaxNameLen bytes of [A-Za-z0-9_.:/-], starting with a
// letter, a digit or '_'.
func validName[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 || len(s) > MaxNameLen || !(isAlnum(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// validTagKey: 1..MaxTagKeyLen bytes of [a-z0-9_], starting with a letter.
func validTagKey[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 || len(s) > MaxTagKeyLen || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// validTagValue: 1..MaxTagValueLen bytes of [A-Za-z0-9_.:/+-].
func validTagValue[T ~string | ~[]byte](s T) bool {
	if len(s) == 0 || len(s) > MaxTagValueLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(isAlnum(c) || c == '_' || c == '.' || c == ':' || c == '/' || c == '+' || c == '-') {
			return false
		}
	}
	return true
}

// checkTag checks one more tag against the marker's.
func (m *Marker) checkTag(key, value string) error {
	return checkTag(m, key, value)
}

func checkTag[T ~string | ~[]byte](m *Marker, key, value T) error {
	switch {
	case !validTagKey(key):
		return errorf("tag "+quote(key), "a key is 1 to %d of a-z, 0-9 and _, starting with a letter", MaxTagKeyLen)
	case reserved(key):
		return errorf("tag "+string(key), "reserved key (name, host, value, mono, rt, time and the record's fields)")
	case !validTagValue(value):
		return errorf("tag "+string(key), "value %s: 1 to %d of A-Z, a-z, 0-9 and _.:/+-", quote(value), MaxTagValueLen)
	case m.NumTags >= MaxTags:
		return errorf("tags", "more than %d", MaxTags)
	}
	for _, t := range m.TagList() {
		if t.Key == string(key) {
			return errorf("tag "+string(key), "given twice")
		}
	}
	return nil
}

// Validate checks that m can be written as a line that parses to m.
func (m *Marker) Validate() error {
	if !validName(m.Name) {
		return errorf("name", "%s: 1 to %d of A-Z, a-z, 0-9 and _.:/-, starting with a letter, a digit or _", quote(m.Name), MaxNameLen)
	}
	if m.HasValue && (math.IsNaN(m.Value) || math.IsInf(m.Value, 0)) {
		return errorf("value", "%v is not finite", m.Value)
	}
	switch m.Clock {
	case ClockNone:
		if m.StampNS != 0 {
			return errorf("stamp", "%d ns without a clock", m.StampNS)
		}
	case ClockMonotonic, ClockRealtime:
		if m.StampNS < 0 {
			return errorf(m.Clock.key(), "%d is negative", m.StampNS)
		}
	default:
		return errorf("stamp", "unknown %s", m.Clock)
	}
	switch {
	case m.True > TrueGlobal:
		return errorf("true stamp", "unknown section %d", m.True)
	case m.True == TrueNone && (m.TrueNS != 0 || m.TrueBoundNS != 0):
		return errorf("true stamp", "%d ± %d ns without a section", m.TrueNS, m.TrueBoundNS)
	case m.True != TrueNone && (m.TrueNS < 0 || m.TrueBoundNS < 0):
		return errorf(trueKeys[m.True], "%d ± %d ns: both must be non-negative", m.TrueNS, m.TrueBoundNS)
	}
	if m.NumTags < 0 || m.NumTags > MaxTags {
		return errorf("tags", "%d, at most %d", m.NumTags, MaxTags)
	}
	var seen Marker
	for _, t := range m.TagList() {
		if err := checkTag(&seen, t.Key, t.Value); err != nil {
			return err
		}
		seen.Tags[seen.NumTags] = t
		seen.NumTags++
	}
	return nil
}

// AppendText appends the marker's line, without a newline, to b: the name,
// then value=, mono= or rt=, and the tags in their order. It fails (and
// appends nothing) for a marker Validate refuses.
func (m *Marker) AppendText(b []byte) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return b, err
	}
	b = append(b, m.Name...)
	if m.HasValue {
		b = append(b, " value="...)
		b = strconv.AppendFloat(b, m.Value, 'g', -1, 64)
	}
	if m.Clock != ClockNone {
		b = append(b, ' ')
		b = append(b, m.Clock.key()...)
		b = append(b, '=')
		b = strconv.AppendInt(b, m.StampNS, 10)
	}
	if m.True != TrueNone {
		k := trueKeys[m.True]
		b = append(append(append(b, ' '), k...), '=')
		b = strconv.AppendInt(b, m.TrueNS, 10)
		b = append(append(append(b, ' '), k...), "_bound="...)
		b = strconv.AppendInt(b, m.TrueBoundNS, 10)
	}
	for _, t := range m.TagList() {
		b = append(b, ' ')
		b = append(b, t.Key...)
		b = append(b, '=')
		b = append(b, t.Value...)
	}
	return b, nil
}

// String is the marker's line, or the reason it has none.
func (m Marker) String() string {
	b, err := m.AppendText(nil)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Parse parses one line. It allocates the name and the tags' strings; a
// Decoder reuses them across lines.
func Parse(b []byte) (Marker, error) {
	return parse(b, nil)
}

// Decoder parses lines like Parse, reusing the strings of names and tags it
// has seen (up to 4096 of them), so that a steady stream of markers parses
// without allocating. Not safe for concurrent use.
type Decoder struct {
	strs map[string]string
}

// maxInterned bounds a Decoder's strings.
const maxInterned = 4096

// Parse parses one line.
func (d *Decoder) Parse(b []byte) (Marker, error) {
	if d.strs == nil {
		d.strs = make(map[string]string)
	}
	return parse(b, d)
}

func (d *Decoder) str(b []byte) string {
	if d == nil {
		return string(b)
	}
	if s, ok := d.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.strs) < maxInterned {
		d.strs[s] = s
	}
	return s
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// parse parses a line; d, when not nil, interns its strings.
func parse(b []byte, d *Decoder) (Marker, error) {
	var m Marker
	bound := 0 // the true stamp's words seen (parseTrue)
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n := len(b); n > 0 && b[n-1] == '\r' {
			b = b[:n-1]
		}
	}
	if len(b) > MaxLen {
		return m, errorf("line", "%d bytes, at most %d", len(b), MaxLen)
	}
	i := 0
	token := func() []byte {
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		j := i
		for i < len(b) && !isSpace(b[i]) {
			i++
		}
		return b[j:i]
	}
	name := token()
	if len(name) == 0 {
		return m, errorf("line", "empty")
	}
	if !validName(name) {
		return m, errorf("name", "%s: 1 to %d of A-Z, a-z, 0-9 and _.:/-, starting with a letter, a digit or _", quote(name), MaxNameLen)
	}
	m.Name = d.str(name)
	for {
		tok := token()
		if len(tok) == 0 {
			break
		}
		eq := -1
		for k, c := range tok {
			if c == '=' {
				eq = k
				break
			}
		}
		if eq < 0 {
			return m, errorf("field", "%s is not key=value", quote(tok))
		}
		key, val := tok[:eq], tok[eq+1:]
		switch string(key) {
		case "value":
			if m.HasValue {
				return m, errorf("value", "given twice")
			}
			v, err := parseValue(val)
			if err != nil {
				return m, err
			}
			m.HasValue, m.Value = true, v
		case "mono", "rt":
			c := ClockMonotonic
			if string(key) == "rt" {
				c = ClockRealtime
			}
			if m.Clock != ClockNone {
				return m, errorf("stamp", "%s after %s: one sender stamp per marker", key, m.Clock.key())
			}
			ns, ok := parseNS(val)
			if !ok {
				return m, errorf(c.key(), "%s is not a count of nanoseconds (1 to 19 digits, at most 2^63-1)", quote(val))
			}
			m.Clock, m.StampNS = c, ns
		case "utc", "utc_bound", "global", "global_bound":
			if err := parseTrue(&m, string(key), val, &bound); err != nil {
				return m, err
			}
		default:
			if err := checkTag(&m, key, val); err != nil {
				return m, err
			}
			m.Tags[m.NumTags] = Tag{d.str(key), d.str(val)}
			m.NumTags++
		}
	}
	if m.True != TrueNone && bound != 3 {
		return m, errorf(trueKeys[m.True], "a true stamp is %[1]s=<ns> and %[1]s_bound=<ns>, both", trueKeys[m.True])
	}
	return m, nil
}

// parseTrue reads one word of a true stamp (utc=, utc_bound=, global=,
// global_bound=) into m; seen counts the stamp's words (2 when whole).
func parseTrue(m *Marker, key string, val []byte, seen *int) error {
	c, isBound := TrueSystem, false
	switch key {
	case "utc_bound":
		isBound = true
	case "global":
		c = TrueGlobal
	case "global_bound":
		c, isBound = TrueGlobal, true
	}
	if m.True != TrueNone && m.True != c {
		return errorf(key, "one true stamp per marker (%s given)", trueKeys[m.True])
	}
	ns, ok := parseNS(val)
	if !ok {
		return errorf(key, "%s is not a count of nanoseconds (1 to 19 digits, at most 2^63-1)", quote(val))
	}
	if isBound {
		if *seen&2 != 0 {
			return errorf(key, "given twice")
		}
		*seen |= 2
		m.TrueBoundNS = ns
	} else {
		if *seen&1 != 0 {
			return errorf(key, "given twice")
		}
		*seen |= 1
		m.TrueNS = ns
	}
	m.True = c
	return nil
}

// parseValue reads a decimal number: digits, '.', an exponent and signs
// only (no hexadecimal, underscores, Inf or NaN), finite.
func parseValue(b []byte) (float64, error) {
	if len(b) == 0 || len(b) > 32 {
		return 0, errorf("value", "%s: a decimal number of 1 to 32 bytes", quote(b))
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, errorf("value", "%s is not a decimal number", quote(b))
		}
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, errorf("value", "%s is not a finite number", quote(b))
	}
	return v, nil
}

// parseNS reads a non-negative int64 of decimal digits.
func parseNS(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}
