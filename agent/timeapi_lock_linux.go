package agent

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// lockSegment takes an exclusive lock on the segment's file (created with
// mode when absent), held until the returned closer closes: two agents
// given one path would overwrite each other's sections.
func lockSegment(path string, mode os.FileMode) (io.Closer, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, mode)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: another agent publishes there (flock: %w)", path, err)
	}
	return f, nil
}
