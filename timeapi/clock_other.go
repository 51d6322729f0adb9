//go:build !(linux && amd64)

package timeapi

import "github.com/monagent/monagent/timebase"

// rawClock reads CLOCK_MONOTONIC_RAW with the clock_gettime system call (on
// 32-bit ARM clock_gettime64, through timebase).
func rawClock() timebase.Clock { return timebase.MonotonicRaw }

// monotonicClock reads CLOCK_MONOTONIC (Past's MONOTONIC stamps).
func monotonicClock() timebase.Clock { return timebase.Monotonic }

// realtimeClock reads CLOCK_REALTIME (Past's REALTIME stamps) through the Go
// runtime (time.Now).
func realtimeClock() timebase.Clock { return timebase.Realtime }
