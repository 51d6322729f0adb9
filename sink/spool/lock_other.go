//go:build !unix

package spool

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrLocked is returned by Open when another process has the spool open.
var ErrLocked = errors.New("spool in use by another process (is the agent running?)")

// lockDir only creates the lock file: this system has no flock.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
}
