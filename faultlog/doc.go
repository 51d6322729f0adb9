// Package faultlog decides what of a recurring failure is logged: the
// start, each change of kind, the end with the count and duration, and a
// summary every ten minutes while it lasts — a board's log holds one line
// per change, not one per attempt. The caller counts every occurrence and
// passes its *slog.Logger; this package holds no logger of its own.
package faultlog
