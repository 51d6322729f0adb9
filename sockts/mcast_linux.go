package sockts

import (
	"fmt"
	"net"
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
	return c.SendMulticast(ifindex)
}

// SendMulticast sends multicast out of interface ifindex (TTL 1, no loopback
// of our own packets) without joining a group: for a socket that only sends.
func (c *Conn) SendMulticast(ifindex int) error {
	if err := unix.SetsockoptIPMreqn(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, &unix.IPMreqn{Ifindex: int32(ifindex)}); err != nil {
		// The older form names the interface by its address (qemu-user and old
		// kernels know only this one).
		addr, aerr := ifaceAddr4(ifindex)
		if aerr != nil {
			return fmt.Errorf("sockts: IP_MULTICAST_IF %d: %w (%v)", ifindex, err, aerr)
		}
		if err := unix.SetsockoptInet4Addr(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_IF, addr.As4()); err != nil {
			return fmt.Errorf("sockts: IP_MULTICAST_IF %s: %w", addr, err)
		}
	}
	if err := unix.SetsockoptInt(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_LOOP, 0); err != nil {
		return fmt.Errorf("sockts: IP_MULTICAST_LOOP: %w", err)
	}
	return unix.SetsockoptInt(c.fd, unix.IPPROTO_IP, unix.IP_MULTICAST_TTL, 1)
}

// ifaceAddr4 returns the first IPv4 address of an interface.
func ifaceAddr4(ifindex int) (netip.Addr, error) {
	ifi, err := net.InterfaceByIndex(ifindex)
	if err != nil {
		return netip.Addr{}, err
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP.To4()); ok && n.IP.To4() != nil {
				return ip, nil
			}
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address", ifi.Name)
}
