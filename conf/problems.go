package conf

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// KeyError is a configuration problem at one key.
type KeyError struct {
	Key     string // dotted path, e.g. clock.interval or phc.devices[1]; "" for the whole file
	Reason  string
	Line    int // line in the file, 0 when unknown
	File    string
	Warning bool  // a setting this machine cannot confirm, or worth a word
	Err     error // the underlying error, if any
	// Also is another key the problem concerns (the first of two entries
	// that say the same thing), and AlsoLine its line.
	Also     string
	AlsoLine int
}

func (e *KeyError) Error() string {
	loc := e.File
	if loc == "" {
		loc = "config"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	var b strings.Builder
	b.WriteString(loc)
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	if e.Warning {
		b.WriteString(": warning")
	}
	b.WriteString(": " + e.Reason)
	if e.Also != "" {
		b.WriteString(" (" + e.Also)
		if e.AlsoLine > 0 {
			fmt.Fprintf(&b, ", line %d", e.AlsoLine)
		}
		b.WriteString(")")
	}
	return b.String()
}

func (e *KeyError) Unwrap() error { return e.Err }

// KeyErr is a problem at key.
func KeyErr(key, format string, a ...any) error {
	return &KeyError{Key: key, Reason: fmt.Sprintf(format, a...)}
}

// Positive is a problem at key when d is not positive, else nil.
func Positive(key string, d time.Duration) error {
	if d <= 0 {
		return KeyErr(key, "must be positive, got %s", d)
	}
	return nil
}

// Problems is every problem found in a configuration, in the order of the
// file's lines. As an error it is one line per problem.
type Problems []*KeyError

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap lets errors.As and errors.Is look at each problem.
func (ps Problems) Unwrap() []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = p
	}
	return errs
}

// Errors is the problems that are not warnings.
func (ps Problems) Errors() Problems {
	return slices.DeleteFunc(slices.Clone(ps), func(p *KeyError) bool { return p.Warning })
}

// Err is nil for no problems, else ps.
func (ps Problems) Err() error {
	if len(ps) == 0 {
		return nil
	}
	return ps
}

// Sort orders problems by line, those without a line last; problems of one
// line keep their order.
func (ps Problems) Sort() {
	slices.SortStableFunc(ps, func(a, b *KeyError) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
}

// List collects the problems of a configuration: the checks append to it
// rather than stop at the first.
type List struct{ Problems Problems }

// Add records a problem at key.
func (l *List) Add(key, format string, a ...any) {
	l.Problems = append(l.Problems, &KeyError{Key: key, Reason: fmt.Sprintf(format, a...)})
}

// Dup records that the entry at key repeats the one at other: the message
// names both, and from a file both lines.
func (l *List) Dup(key, other, format string, a ...any) {
	l.Problems = append(l.Problems, &KeyError{Key: key, Reason: fmt.Sprintf(format, a...), Also: other})
}

// Put records a problem built by the caller.
func (l *List) Put(ke *KeyError) { l.Problems = append(l.Problems, ke) }

// AddErr records err: a *KeyError or Problems (perhaps wrapped) as they
// are, any other error as a problem without a key.
func (l *List) AddErr(err error) {
	var ps Problems
	var ke *KeyError
	switch {
	case err == nil:
	case errors.As(err, &ps):
		l.Problems = append(l.Problems, ps...)
	case errors.As(err, &ke):
		l.Problems = append(l.Problems, ke)
	default:
		l.Problems = append(l.Problems, &KeyError{Reason: err.Error(), Err: err})
	}
}

// Positive records a problem when d is not positive.
func (l *List) Positive(key string, d time.Duration) { l.AddErr(Positive(key, d)) }

// Err is the collected problems, nil for none.
func (l *List) Err() error { return l.Problems.Err() }

// Exists records a problem at key when path cannot be found: "what: the
// error" (a device, a file a setting names). It is for checks only the
// board can confirm.
func (l *List) Exists(key, what, path string) {
	if _, err := os.Stat(path); err != nil {
		l.Put(&KeyError{Key: key, Reason: what + ": " + err.Error(), Err: err})
	}
}

// Seen remembers the first entry of a list with each key, for checks that a
// key is listed once.
type Seen[K comparable] map[K]int

// Again says whether k was seen before and at which entry; if not, it
// remembers entry i as k's.
func (s Seen[K]) Again(k K, i int) (first int, again bool) {
	if first, again = s[k]; !again {
		s[k] = i
	}
	return first, again
}

// Set records a problem when v is empty: "must be set", then why (" (a
// path)", ": what it is for", or "").
func (l *List) Set(key, v, why string) {
	if v == "" {
		l.Add(key, "must be set%s", why)
	}
}

// NotEmpty records a problem when v is empty.
func (l *List) NotEmpty(key, v string) {
	if v == "" {
		l.Add(key, "must not be empty")
	}
}

// Within records a problem when v lies outside lo..hi (a NaN does):
// "must be within lo..hi<unit>, got v".
func Within[N int | int64 | float64](l *List, key string, v, lo, hi N, unit string) {
	if !(v >= lo && v <= hi) {
		l.Add(key, "must be within %s..%s%s, got %s", number(lo), number(hi), unit, number(v))
	}
}

// AtLeast records a problem when v is less than least: "must be at least
// least<unit>, got v".
func AtLeast[N int | int64 | time.Duration](l *List, key string, v, least N, unit string) {
	if v < least {
		l.Add(key, "must be at least %v%s, got %v", least, unit, v)
	}
}

// MinInterval is the shortest interval a source may be given (clock, phc,
// sensors, the daemons' polls, the event sources' shipping, self_metrics):
// faster measures nothing more (a clock read takes microseconds, a daemon
// updates its state once per measurement, an event source ships whatever
// its ring holds) and floods the outputs (clock.interval: 1ns wrote 330,000
// points in 3 s).
const MinInterval = 10 * time.Millisecond

// Interval records a problem when a source's interval d is under
// MinInterval.
func (l *List) Interval(key string, d time.Duration) {
	AtLeast(l, key, d, MinInterval, " (a source's interval: faster measures nothing more and floods the outputs)")
}

// NotNegative records a problem when v is negative.
func NotNegative[N int | time.Duration](l *List, key string, v N) {
	if v < 0 {
		l.Add(key, "must not be negative, got %v", v)
	}
}

// number writes a bound or a value as a person wrote it: 1000000, not
// 1e+06.
func number[N int | int64 | float64](v N) string {
	if f, ok := any(v).(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
