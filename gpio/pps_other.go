//go:build !linux

package gpio

import (
	"context"
	"fmt"
	"runtime"
)

// PPSDevice is an open /dev/ppsN (Linux only).
type PPSDevice struct{}

// OpenPPS fails outside Linux.
func OpenPPS(path string, cfg PPSConfig) (*PPSDevice, error) {
	return nil, fmt.Errorf("pps %s: the PPS interface needs Linux, not %s", path, runtime.GOOS)
}

// Path is empty outside Linux.
func (d *PPSDevice) Path() string { return "" }

// Info is empty outside Linux.
func (d *PPSDevice) Info() PPSInfo { return PPSInfo{} }

// Tracker is empty outside Linux.
func (d *PPSDevice) Tracker() *PPSTracker { return &PPSTracker{} }

// Fetch fails outside Linux.
func (d *PPSDevice) Fetch(ctx context.Context) (PPSEvent, uint64, error) {
	return PPSEvent{}, 0, fmt.Errorf("pps: needs Linux, not %s", runtime.GOOS)
}

// Close does nothing outside Linux.
func (d *PPSDevice) Close() error { return nil }
