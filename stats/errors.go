package stats

import (
	"errors"
	"fmt"
)

var (
	// ErrEmpty is returned for an input without samples.
	ErrEmpty = errors.New("no samples")
	// ErrTooShort is returned when a series is too short for the requested
	// statistic (a drift fit with fewer than 3 points, a stability measure
	// with no tau the series is long enough for).
	ErrTooShort = errors.New("series too short")
	// ErrNotFinite is returned for float input holding NaN or an infinity.
	ErrNotFinite = errors.New("value is not finite")
	// ErrIrregular is wrapped by every *IrregularError.
	ErrIrregular = errors.New("timestamps not regular")
)

// IrregularError reports the first timestamp that breaks a series: out of
// order or duplicate (Delta <= 0), or not one sampling interval after its
// predecessor (a gap, or a sample too early).
type IrregularError struct {
	Index int   // index of the offending timestamp; its predecessor is Index-1
	Delta int64 // t[Index] - t[Index-1], ns
	Tau0  int64 // the expected interval, ns (0 when only order is checked)
}

func (e *IrregularError) Error() string {
	switch {
	case e.Delta == 0:
		return fmt.Sprintf("timestamp %d duplicates timestamp %d", e.Index, e.Index-1)
	case e.Delta < 0:
		return fmt.Sprintf("timestamp %d is %d ns before timestamp %d: not sorted", e.Index, -e.Delta, e.Index-1)
	default:
		return fmt.Sprintf("timestamp %d is %d ns after timestamp %d, want %d ns +- %d ns", e.Index, e.Delta, e.Index-1, e.Tau0, e.Tau0/2)
	}
}

// Unwrap returns ErrIrregular.
func (e *IrregularError) Unwrap() error { return ErrIrregular }
