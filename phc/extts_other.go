//go:build !linux

package phc

import (
	"context"
	"fmt"
	"runtime"

	"github.com/monagent/monagent/timebase"
)

// Extts is a PHC with external timestamps enabled (Linux only).
type Extts struct{}

// OpenExtts fails outside Linux.
func OpenExtts(path string, chans ...ExttsChannel) (*Extts, error) {
	return nil, fmt.Errorf("phc %s: external timestamps need Linux, not %s", path, runtime.GOOS)
}

// Domain is the clock domain of the stamps.
func (x *Extts) Domain() timebase.Domain { return timebase.DomainUnknown }

// Read fails outside Linux.
func (x *Extts) Read(ctx context.Context, dst []ExttsEvent) (int, error) {
	return 0, fmt.Errorf("phc: external timestamps need Linux, not %s", runtime.GOOS)
}

// Stats are zero outside Linux.
func (x *Extts) Stats() ExttsStats { return ExttsStats{} }

// Close does nothing outside Linux.
func (x *Extts) Close() error { return nil }
