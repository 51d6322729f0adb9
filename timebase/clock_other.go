//go:build !linux

package timebase

import (
	"fmt"
	"runtime"
)

func clockGettime(int32) (int64, error) {
	return 0, fmt.Errorf("clock_gettime on %s: %w", runtime.GOOS, ErrNotSupported)
}

func clockGetres(int32) (int64, error) {
	return 0, fmt.Errorf("clock_getres on %s: %w", runtime.GOOS, ErrNotSupported)
}
