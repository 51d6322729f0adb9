package timeapi

import "github.com/monagent/monagent/timebase"

// rawClock is the fastest reader of CLOCK_MONOTONIC_RAW on this platform.
func rawClock() timebase.Clock { return timebase.MonotonicRaw }
