// Package judge says whether a clock's time is good: a state machine per
// judged clock (UNKNOWN, LOCKED, HOLDOVER, FREERUN) fed the samples of the
// source that measures or disciplines it, and the error bound of each
// sample, the largest error the clock can have against its reference given
// what was measured (bound.go: the formulas, with their sources).
//
// The states are linuxptp-daemon's clock_state, decided as it decides them
// (an offset threshold and a holdover timeout) but on the error bound rather
// than the bare offset, and with the holdover ended early once the bound
// predicted from the last frequency error passes the threshold. Every
// transition carries the time of the sample, or of the deadline, that caused
// it: a collector that looks late still dates it right.
//
// Every duration it measures (a source's silence, a holdover, the bound's
// growth) is on a steady clock (CLOCK_MONOTONIC) carried beside each
// sample's REALTIME stamp: a Timeline places the stamps on it and sees the
// steps of REALTIME, which change no state. REALTIME only labels
// (timeline.go). A margin below the threshold (hysteresis) and a floor
// under the rate a bound grows at in HOLDOVER are part of the Config.
//
// It does no I/O and allocates nothing per sample; the agent feeds it and
// turns its transitions into records, metrics and notifications.
package judge
