package gnss

import (
	"errors"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner walks one line of JSON (RFC 8259), checking it as it skips
// values. It allocates nothing.
type scanner struct {
	b []byte
	i int
}

// maxDepth is the deepest nesting a line may have; gpsd's is 3.
const maxDepth = 32

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) eat(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

var (
	errEnd     = errors.New("unexpected end")
	errString  = errors.New("malformed string")
	errNumber  = errors.New("malformed number")
	errValue   = errors.New("malformed value")
	errNesting = errors.New("nested too deeply")
)

// str skips a string.
func (s *scanner) str() error {
	if !s.eat('"') {
		return errString
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return nil
		case c < 0x20:
			return errString
		case c == '\\':
			if s.i >= len(s.b) {
				return errEnd
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 > len(s.b) {
					return errEnd
				}
				for _, h := range s.b[s.i : s.i+4] {
					if hexVal(h) < 0 {
						return errString
					}
				}
				s.i += 4
			default:
				return errString
			}
		}
	}
	return errEnd
}

// value skips one value at nesting depth.
func (s *scanner) value(depth int) error {
	if depth > maxDepth {
		return errNesting
	}
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == '{' || c == '[':
		return s.container(c == '{', depth)
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	case c == 0 && s.i >= len(s.b):
		return errEnd
	}
	return errValue
}

// container skips an object (its members "name": value) or an array at
// depth, from its opening bracket.
func (s *scanner) container(object bool, depth int) error {
	end := byte(']')
	if object {
		end = '}'
	}
	s.i++
	s.ws()
	if s.eat(end) {
		return nil
	}
	for {
		s.ws()
		if object {
			if err := s.str(); err != nil {
				return err
			}
			s.ws()
			if !s.eat(':') {
				return errValue
			}
			s.ws()
		}
		if err := s.value(depth + 1); err != nil {
			return err
		}
		s.ws()
		if s.eat(end) {
			return nil
		}
		if !s.eat(',') {
			return errValue
		}
	}
}

func (s *scanner) literal(w string) error {
	if len(s.b)-s.i < len(w) || string(s.b[s.i:s.i+len(w)]) != w {
		return errValue
	}
	s.i += len(w)
	return nil
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	s.eat('-')
	switch {
	case s.eat('0'):
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return errNumber
	}
	if s.eat('.') {
		if s.digits() == 0 {
			return errNumber
		}
	}
	if s.eat('e') || s.eat('E') {
		if !s.eat('+') {
			s.eat('-')
		}
		if s.digits() == 0 {
			return errNumber
		}
	}
	return nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && isDigit(s.b[s.i]) {
		s.i++
		n++
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// unquote appends the unescaped content of a checked JSON string (without
// its quotes) to dst, as encoding/json does: a lone surrogate and each
// byte of invalid UTF-8 become U+FFFD.
func unquote(dst, in []byte) ([]byte, bool) {
	for i := 0; i < len(in); i++ {
		c := in[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && n == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, in[i:i+n]...)
			}
			i += n - 1
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		if i+1 >= len(in) {
			return dst, false
		}
		i++
		switch in[i] {
		case '"', '\\', '/':
			dst = append(dst, in[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(in[i+1:])
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				if i+6 < len(in) && in[i+1] == '\\' && in[i+2] == 'u' {
					if r2, ok := hex4(in[i+3:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		h := hexVal(c)
		if h < 0 {
			return 0, false
		}
		r = r<<4 | rune(h)
	}
	return r, true
}
