//go:build !linux

package agent

import (
	"io"
	"os"
)

// lockSegment: no lock off Linux (the agent runs on Linux).
func lockSegment(path string, mode os.FileMode) (io.Closer, error) { return io.NopCloser(nil), nil }
