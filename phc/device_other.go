//go:build !linux

package phc

import (
	"fmt"
	"runtime"

	"github.com/monagent/monagent/timebase"
)

// Device is an open PHC character device (Linux only).
type Device struct{}

// Open fails outside Linux.
func Open(path string) (*Device, error) {
	return nil, fmt.Errorf("phc %s: PTP hardware clocks need Linux, not %s", path, runtime.GOOS)
}

// Domain is the PHC's clock domain (never reached: Open fails).
func (d *Device) Domain() timebase.Domain { return timebase.DomainUnknown }

// NewSampler returns a sampler whose readings fail outside Linux.
func (d *Device) NewSampler(samples int, prefer Method) *Sampler { return &Sampler{} }

// Close does nothing.
func (d *Device) Close() error { return nil }

// Sampler reads a PHC against system clocks (Linux only).
type Sampler struct{}

// Sample fails outside Linux.
func (s *Sampler) Sample(sys timebase.Domain, r *Reading) error {
	return fmt.Errorf("phc: PTP hardware clocks need Linux, not %s", runtime.GOOS)
}

// Fallbacks is 0 outside Linux.
func (s *Sampler) Fallbacks() uint64 { return 0 }

// Refusals is none outside Linux.
func (s *Sampler) Refusals() []string { return nil }

// LastMethod is the zero Method outside Linux.
func (s *Sampler) LastMethod(sys timebase.Domain) Method { return 0 }
