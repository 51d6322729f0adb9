// Package timebase is the vocabulary of time in monagent: clock domains, clocks,
// timestamps with an uncertainty, linear models between two clocks and the
// translation of timestamps from one domain to another.
//
// A timestamp is an int64 count of nanoseconds in an explicit clock domain
// (REALTIME, TAI, MONOTONIC, MONOTONIC_RAW, BOOTTIME, a PTP hardware clock or the
// HCA global timeline). Float seconds never appear; floating point is used only for
// dimensionless ratios (slopes, skews) applied to small nanosecond differences.
//
// Clocks are read with clock_gettime(2) (see clock_gettime(2) and
// Documentation/driver-api/ptp.rst for dynamic PHC clock ids). The kernel clock
// discipline state comes from adjtimex(2), read with modes 0, so reading it never
// changes the clock. ReadOffset reads one clock's offset from another between
// two reads of that one, and OffsetSteps finds a clock's steps in such offsets.
// VirtualClock simulates a drifting clock over a real one for the
// clock synchronisation algorithms and their tests.
//
// Nothing in this package steps or slews a clock.
package timebase
