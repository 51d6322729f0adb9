package hca

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// enableRxStamps asks the kernel for software receive timestamps on conn
// (SO_TIMESTAMPING_NEW, else the old option), reporting whether it agreed.
// qemu-user and exotic kernels refuse; the Endpoint then stamps in user
// space.
func enableRxStamps(conn *net.UDPConn) bool {
	rc, err := conn.SyscallConn()
	if err != nil {
		return false
	}
	flags := unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE
	ok := false
	_ = rc.Control(func(fd uintptr) {
		err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW, flags)
		if errors.Is(err, unix.ENOPROTOOPT) {
			err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags)
		}
		ok = err == nil
	})
	return ok
}
