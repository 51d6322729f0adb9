//go:build !linux

package spool

// freeBytes is not told off Linux.
func freeBytes(dir string) (free int64, at string, ok bool) { return 0, dir, false }
