//go:build unix

package marker

import (
	"errors"

	"golang.org/x/sys/unix"
)

// dial opens an AF_UNIX datagram socket connected to path.
func dial(path string) (int, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM, 0)
	if err != nil {
		return -1, err
	}
	unix.CloseOnExec(fd)
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// send sends b as one datagram without blocking.
func send(fd int, b []byte) error {
	for {
		err := unix.Sendto(fd, b, unix.MSG_DONTWAIT, nil)
		if err != unix.EINTR {
			return err
		}
	}
}

// full reports a send refused because the receiver's queue is full.
func full(err error) bool {
	return errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.ENOBUFS)
}

func closeFD(fd int) error { return unix.Close(fd) }

// monotonicNow reads CLOCK_MONOTONIC in ns.
func monotonicNow() (int64, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, err
	}
	return ts.Nano(), nil
}
