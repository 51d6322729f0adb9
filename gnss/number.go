package gnss

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The values of gpsd's members: JSON integers and decimals read exactly
// into ns, and its ISO 8601 times.

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
