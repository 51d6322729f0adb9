//go:build !linux

package ptp

import (
	"context"
	"fmt"
	"runtime"
)

// ListenUDP fails outside Linux: the probe needs kernel packet timestamps.
func ListenUDP(cfg UDPConfig) (*Probe, error) {
	return nil, fmt.Errorf("ptp probe on %s: kernel packet timestamps need Linux, not %s", cfg.Interface, runtime.GOOS)
}

// ListenL2 fails outside Linux.
func ListenL2(cfg L2Config) (*Probe, error) {
	return nil, fmt.Errorf("ptp probe on %s: raw sockets need Linux, not %s", cfg.Interface, runtime.GOOS)
}

// Run fails outside Linux (a Probe cannot be opened there).
func (p *Probe) Run(ctx context.Context, emit func(*Exchange)) error {
	return fmt.Errorf("ptp probe: needs Linux, not %s", runtime.GOOS)
}

// Close does nothing outside Linux.
func (p *Probe) Close() error { return nil }
