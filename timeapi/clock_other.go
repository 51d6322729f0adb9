//go:build !(linux && amd64)

package timeapi

import "github.com/monagent/monagent/timebase"

// rawClock reads CLOCK_MONOTONIC_RAW with the clock_gettime system call (on
// 32-bit ARM clock_gettime64, through timebase).
func rawClock() timebase.Clock { return timebase.MonotonicRaw }
