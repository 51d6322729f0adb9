//go:build !linux

package phc

import (
	"fmt"
	"runtime"
)

// Device is an open PHC character device (Linux only).
type Device struct{}

// Open fails outside Linux.
func Open(path string) (*Device, error) {
	return nil, fmt.Errorf("phc %s: PTP hardware clocks need Linux, not %s", path, runtime.GOOS)
}

// InterfacePHC fails outside Linux.
func InterfacePHC(iface string) (int, error) {
	return -1, fmt.Errorf("ethtool %s: needs Linux, not %s", iface, runtime.GOOS)
}

// InterfaceTimestamping fails outside Linux.
func InterfaceTimestamping(iface string) (Timestamping, error) {
	return Timestamping{PHCIndex: -1}, fmt.Errorf("ethtool %s: needs Linux, not %s", iface, runtime.GOOS)
}
