package testbed

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// Discard listens on the discard port of h's loopback (127.0.0.1:9), where
// the NTP and PTP probes send their warm-up datagrams; closed when the test
// ends.
type Discard struct{ fd int }

// ListenDiscard opens h's discard port.
func ListenDiscard(t testing.TB, h *Host) *Discard {
	t.Helper()
	d := &Discard{fd: -1}
	if err := h.Do(func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		d.fd = fd
		t.Cleanup(func() { unix.Close(fd) })
		// Count stops once none came for 50 ms.
		if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Usec: 50_000}); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrInet4{Port: 9, Addr: [4]byte{127, 0, 0, 1}})
	}); err != nil {
		t.Fatalf("discard port in %s: %v", h.Name, err)
	}
	return d
}

// Count reads the datagrams until none came for 50 ms and returns how many
// there were and how many of them were not one byte long.
func (d *Discard) Count(t testing.TB) (n, notOneByte int) {
	t.Helper()
	var b [16]byte
	for {
		m, _, err := unix.Recvfrom(d.fd, b[:], 0)
		if errors.Is(err, unix.EAGAIN) {
			return n, notOneByte
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("discard port: %v", err)
		}
		n++
		if m != 1 {
			notOneByte++
		}
	}
}
