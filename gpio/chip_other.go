//go:build !linux

package gpio

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

// Chip is an open GPIO character device (Linux only).
type Chip struct{}

// Request is a set of requested lines (Linux only).
type Request struct{}

// Open fails outside Linux.
func Open(path string) (*Chip, error) {
	return nil, fmt.Errorf("gpio %s: the GPIO character device needs Linux, not %s", path, runtime.GOOS)
}

// NewFileReader fails outside Linux.
func NewFileReader(f *os.File, name string, clock EventClock, maxEvents int) (*Reader, error) {
	return nil, fmt.Errorf("gpio %s: the GPIO character device needs Linux, not %s", name, runtime.GOOS)
}

// OpenReplay fails outside Linux.
func OpenReplay(path, chip string, clock EventClock, maxEvents int) (*Reader, error) {
	return nil, fmt.Errorf("gpio %s: replay: needs Linux, not %s", chip, runtime.GOOS)
}

// Info is empty outside Linux.
func (c *Chip) Info() ChipInfo { return ChipInfo{} }

// LineInfo fails outside Linux.
func (c *Chip) LineInfo(offset int) (LineInfo, error) {
	return LineInfo{}, fmt.Errorf("gpio line %d: needs Linux, not %s", offset, runtime.GOOS)
}

// RequestLines fails outside Linux.
func (c *Chip) RequestLines(offsets []int, cfg LineConfig) (*Request, error) {
	return nil, fmt.Errorf("gpio lines %v: needs Linux, not %s", offsets, runtime.GOOS)
}

// WatchLineInfo fails outside Linux.
func (c *Chip) WatchLineInfo(offset int) (LineInfo, error) {
	return LineInfo{}, fmt.Errorf("gpio line %d: needs Linux, not %s", offset, runtime.GOOS)
}

// ReadInfoChange fails outside Linux.
func (c *Chip) ReadInfoChange(ctx context.Context) (InfoChange, error) {
	return InfoChange{}, fmt.Errorf("gpio: needs Linux, not %s", runtime.GOOS)
}

// Close does nothing outside Linux.
func (c *Chip) Close() error { return nil }

// Reader fails outside Linux: it returns nil.
func (r *Request) Reader(maxEvents int) *Reader { return nil }

// Close does nothing outside Linux.
func (r *Request) Close() error { return nil }
