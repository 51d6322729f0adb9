//go:build linux && !arm

package timebase

import "golang.org/x/sys/unix"

// clockGettime reads a clock; time_t is 64 bits on every target but arm.
func clockGettime(id int32) (int64, error) {
	var ts unix.Timespec
	return timespecResult("clock_gettime", id, &ts, unix.ClockGettime(id, &ts))
}
