package ptp

import (
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
)

// ListenL2 opens a raw socket for EtherType 0x88F7 on the interface and joins
// the PTP group 01:1B:19:00:00:00. Unlike UDP it can run beside a ptp4l on
// the same interface: raw sockets share frames instead of binding ports.
func ListenL2(cfg L2Config) (*Probe, error) {
	ifi, port, err := probeInterface(cfg.Interface)
	if err != nil {
		return nil, err
	}
	pc, err := packet.Listen(ifi, packet.Raw, int(EtherType), nil)
	if err != nil {
		if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("ptp probe: %s: %w (%v)", cfg.Interface, ErrNoRawSocket, err)
		}
		return nil, fmt.Errorf("ptp probe: raw socket on %s: %w", cfg.Interface, err)
	}
	p := &Probe{Slave: &Slave{Port: port, Domain: cfg.Domain}, Transport: "l2", closers: []func() error{pc.Close}, hardware: cfg.Hardware}
	opts := sockts.Options{TxWait: cfg.TxWait, Hardware: cfg.Hardware, Interface: cfg.Interface, RxFilters: rxFiltersL2}
	if err := pc.JoinGroup(L2Group); err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: join %s on %s: %w", L2Group, cfg.Interface, err)
	}
	rc, err := pc.SyscallConn()
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: %w", err)
	}
	var c *sockts.Conn
	var serr error
	if err := rc.Control(func(fd uintptr) {
		c, serr = sockts.FromFD(int(fd), opts)
	}); err != nil || serr != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: timestamps on %s: %w", cfg.Interface, errors.Join(err, serr))
	}
	p.readers = []reader{{c: c, l2: true}}
	// Delay_Reqs leave from a raw socket of their own that receives nothing
	// (protocol 0) and that nobody waits on: see ListenUDP for why.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		p.Close()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, fmt.Errorf("ptp probe: %s: %w (%v)", cfg.Interface, ErrNoRawSocket, err)
		}
		return nil, fmt.Errorf("ptp probe: send socket on %s: %w", cfg.Interface, err)
	}
	p.closers = append(p.closers, func() error { return unix.Close(fd) })
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: ifi.Index}); err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: bind send socket to %s: %w", cfg.Interface, err)
	}
	tx, err := sockts.FromFD(fd, opts)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: timestamps on %s: %w", cfg.Interface, err)
	}
	if !cfg.NoWarmUp && !cfg.Hardware {
		// A raw socket's frame would leave on the link: the warm-up datagram
		// goes from a UDP socket of its own to the host's loopback, which
		// warms the stack's send path that the frame shares from
		// dev_queue_xmit on.
		wfd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("ptp probe: warm-up socket: %w", err)
		}
		p.closers = append(p.closers, func() error { return unix.Close(wfd) })
		d := loopbackDiscard()
		to, one := &unix.SockaddrInet4{Port: int(d.Port()), Addr: d.Addr().As4()}, make([]byte, 1)
		p.warm = func() { _ = unix.Sendto(wfd, one, 0, to) }
	}
	src := ifi.HardwareAddr
	p.send = func(b []byte) (sockts.Timestamp, error) {
		f, err := l2Frame(src, b)
		if err != nil {
			return sockts.Timestamp{}, err
		}
		ts, err := tx.Write(f)
		if err == nil {
			p.BytesSent.Add(uint64(len(f)))
		}
		return ts, err
	}
	return p, nil
}
