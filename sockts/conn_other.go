//go:build !linux

package sockts

import (
	"fmt"
	"net/netip"
	"runtime"
	"time"
)

// errOS: kernel timestamps are Linux's SO_TIMESTAMPING.
var errOS = fmt.Errorf("sockts: kernel packet timestamps need linux, not %s", runtime.GOOS)

// Conn is a UDP socket with kernel timestamps (Linux only).
type Conn struct{}

// ListenUDP fails off Linux.
func ListenUDP(laddr netip.AddrPort, o Options) (*Conn, error) { return nil, errOS }

// FromFD fails off Linux.
func FromFD(fd int, o Options) (*Conn, error) { return nil, errOS }

// Option fails off Linux.
func (c *Conn) Option() (string, error) { return "none", errOS }

// LocalAddr fails off Linux.
func (c *Conn) LocalAddr() (netip.AddrPort, error) { return netip.AddrPort{}, errOS }

// Close does nothing off Linux.
func (c *Conn) Close() error { return nil }

// WriteTo fails off Linux.
func (c *Conn) WriteTo(b []byte, to netip.AddrPort) (Timestamp, error) { return Timestamp{}, errOS }

// Write fails off Linux.
func (c *Conn) Write(b []byte) (Timestamp, error) { return Timestamp{}, errOS }

// ReadFrom fails off Linux.
func (c *Conn) ReadFrom(b []byte, timeout time.Duration) (int, netip.AddrPort, Timestamp, error) {
	return 0, netip.AddrPort{}, Timestamp{}, errOS
}

// InterfaceTimestamping fails off Linux.
func InterfaceTimestamping(iface string) (Timestamping, error) {
	return Timestamping{PHCIndex: -1}, fmt.Errorf("ethtool %s: needs Linux, not %s", iface, runtime.GOOS)
}
