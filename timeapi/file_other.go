//go:build !linux

package timeapi

import (
	"fmt"
	"os"
	"runtime"
)

func createFile(string, os.FileMode) (segment, func() error, error) {
	return segment{}, nil, fmt.Errorf("shared-memory time segment not supported on %s", runtime.GOOS)
}

func openFile(string) (segment, func() error, error) {
	return segment{}, nil, fmt.Errorf("shared-memory time segment not supported on %s", runtime.GOOS)
}
