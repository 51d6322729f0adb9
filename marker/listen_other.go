//go:build !linux

package marker

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

type listenSocket struct{}

// Listen fails outside Linux (kernel-stamped Unix datagrams).
func Listen(path string, mode os.FileMode) (*Listener, error) {
	return nil, fmt.Errorf("marker socket %s: needs Linux, not %s", path, runtime.GOOS)
}

// Read fails outside Linux.
func (l *Listener) Read(ctx context.Context, buf []byte) (int, int64, bool, error) {
	return 0, 0, false, fmt.Errorf("marker socket: needs Linux, not %s", runtime.GOOS)
}

// Close does nothing outside Linux.
func (l *Listener) Close() error { return nil }
