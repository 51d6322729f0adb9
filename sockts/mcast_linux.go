package sockts

import (
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// JoinGroup joins an IPv4 multicast group on interface ifindex and sends
// multicast there (TTL 1, no loopback of our own packets).
func (c *Conn) JoinGroup(group netip.Addr, ifindex int) error {
	mreq := &unix.IPMreqn{Multiaddr: group.As4(), Ifindex: int32(ifindex)}
	if err := unix.SetsockoptIPMreqn(c.fd, unix.IPPROTO_IP, unix.IP_ADD_MEMBERSHIP, mreq); err != nil {
		return fmt.Errorf("sockts: join %s on interface %d: %w", group, ifindex, err)
	}
	if err := unix.SetsockoptIPMreqn(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifindex)}); err != nil {
		return fmt.Errorf("sockts: IP_MULTICAST_IF %d: %w", ifindex, err)
	}
	if err := unix.SetsockoptInt(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 0); err != nil {
		return fmt.Errorf("sockts: IP_MULTICAST_LOOP: %w", err)
	}
	return unix.SetsockoptInt(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, 1)
}
