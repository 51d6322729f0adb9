package reject

import (
	"errors"
	"fmt"
	"strconv"
)

// Reason is a decoder's enumeration of why it refuses input. String is the
// reason's counter name.
type Reason interface {
	~uint8
	String() string
}

// Error is input refused for Reason.
type Error[R Reason] struct {
	Subject string // what was refused: "ntp reply", "ptp message"
	Reason  R
	Detail  string
}

func (e *Error[R]) Error() string {
	return e.Subject + " rejected (" + e.Reason.String() + "): " + e.Detail
}

// Errorf returns an *Error of subject for reason r, its detail formatted.
func Errorf[R Reason](subject string, r R, format string, a ...any) error {
	return &Error[R]{Subject: subject, Reason: r, Detail: fmt.Sprintf(format, a...)}
}

// Of returns the reason of the *Error[R] in err's chain, or R's zero value
// (a decoder's "none") when there is none.
func Of[R Reason](err error) R {
	var e *Error[R]
	if errors.As(err, &e) {
		return e.Reason
	}
	return 0
}

// Name is names[r], or "reject(N)" for a reason beyond them: the String of
// a Reason.
func Name(names []string, r uint8) string {
	if int(r) < len(names) {
		return names[r]
	}
	return "reject(" + strconv.Itoa(int(r)) + ")"
}
