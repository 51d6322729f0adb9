// Package reject is the error a decoder returns for input it does not use,
// with a reason it counts: an NTP reply (ntp), a PTP message (ptp). Each
// decoder names its reasons as a small integer type (its zero the "none" of
// an error of another kind), returns an Error for what it refuses, and its
// callers count by the reason Of gives back, through any wrapping.
//
// It holds no state. Errors that are not a refusal counted by reason (a
// socket's, a daemon's) should not use it: wrap them with %w as usual.
package reject
