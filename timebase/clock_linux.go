package timebase

import (
	"fmt"

	"golang.org/x/sys/unix"
)

func clockGetres(id int32) (int64, error) {
	var ts unix.Timespec
	return timespecResult("clock_getres", id, &ts, unix.ClockGetres(id, &ts))
}

// timespecResult is the result of the clock system call name on clock id,
// which filled ts or failed with err, in nanoseconds.
func timespecResult(name string, id int32, ts *unix.Timespec, err error) (int64, error) {
	if err != nil {
		return 0, fmt.Errorf("%s(%d): %w", name, id, err)
	}
	return ts.Nano(), nil
}
