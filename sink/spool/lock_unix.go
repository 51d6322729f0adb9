//go:build unix

package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is returned by Open when another process has the spool open.
var ErrLocked = errors.New("spool in use by another process (is the agent running?)")

// lockDir takes an exclusive lock on dir/lock for the life of the spool: two
// processes appending to one spool would interleave sequence numbers.
func lockDir(dir string) (*os.File, error) {
	p := filepath.Join(dir, "lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", p, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("spool %s: %w", dir, ErrLocked)
		}
		return nil, fmt.Errorf("spool %s: lock: %w", p, err)
	}
	return f, nil
}
