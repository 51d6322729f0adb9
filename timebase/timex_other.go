//go:build !linux

package timebase

import (
	"fmt"
	"runtime"
)

// ReadKernelState is not available outside Linux.
func ReadKernelState() (KernelState, error) {
	return KernelState{}, fmt.Errorf("adjtimex on %s: %w", runtime.GOOS, ErrNotSupported)
}
