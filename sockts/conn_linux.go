package sockts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// sendTries bounds the 10 ms waits of a send on a full socket queue.
const sendTries = 20

// rxFiltersNTP: every packet, else NTP packets.
var rxFiltersNTP = []int32{unix.HWTSTAMP_FILTER_ALL, unix.HWTSTAMP_FILTER_NTP_ALL}

// Conn is a UDP socket with kernel timestamps. One goroutine may read
// (ReadFrom) while another writes (WriteTo): the receive path and the
// error-queue path have buffers of their own. Two readers or two writers must
// not share it.
type Conn struct {
	fd         int
	v6         bool
	opts       Options
	layout     Layout
	rx, tx     path
	errBuf     []byte
	sent       uint32 // sends so far: the OPT_ID key of the next send
	option     string // the timestamping option in use
	noTSReason error  // why there are no kernel timestamps, when option is "none"
	borrowed   bool   // the fd belongs to someone else (FromFD): Close leaves it
}

// ListenUDP opens a UDP socket bound to laddr (port 0 for any) with receive and
// transmit timestamps.
func ListenUDP(laddr netip.AddrPort, o Options) (*Conn, error) {
	family := unix.AF_INET
	if laddr.Addr().Is6() && !laddr.Addr().Is4In6() {
		family = unix.AF_INET6
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sockts: socket: %w", err)
	}
	c := newConn(fd, o)
	c.v6 = family == unix.AF_INET6
	if err := c.setup(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	sa, err := sockaddr(laddr, c.v6)
	if err == nil && o.ReuseAddr {
		if err = unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
			err = fmt.Errorf("sockts: SO_REUSEADDR: %w", err)
		}
	}
	if err == nil {
		err = unix.Bind(c.fd, sa)
		if err != nil {
			err = fmt.Errorf("sockts: bind %s: %w", laddr, err)
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return c, nil
}

// FromFD turns on timestamping on a socket opened elsewhere: a raw AF_PACKET
// socket of mdlayher/packet, bound to its interface. Send on it with Write
// (the frame carries its destination); ReadFrom skips the socket's copies of
// outgoing frames. The fd stays its owner's: Close does not close it, and it
// must stay open while the Conn is used.
func FromFD(fd int, o Options) (*Conn, error) {
	c := newConn(fd, o)
	c.borrowed = true
	if err := c.setup(); err != nil {
		return nil, err
	}
	// Kernels from 4.20 drop outgoing frames themselves; ReadFrom checks too.
	_ = unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	return c, nil
}

func newConn(fd int, o Options) *Conn {
	if o.TxWait <= 0 {
		o.TxWait = 10 * time.Millisecond
	}
	if len(o.RxFilters) == 0 {
		o.RxFilters = rxFiltersNTP
	}
	return &Conn{fd: fd, opts: o, layout: NativeLayout(),
		rx: path{oob: make([]byte, 512)}, tx: path{oob: make([]byte, 512)}, errBuf: make([]byte, 64), option: "SO_TIMESTAMPING_NEW"}
}

func (c *Conn) setup() error {
	flags := unix.SOF_TIMESTAMPING_RX_SOFTWARE | unix.SOF_TIMESTAMPING_TX_SOFTWARE | unix.SOF_TIMESTAMPING_SOFTWARE |
		unix.SOF_TIMESTAMPING_OPT_ID | unix.SOF_TIMESTAMPING_OPT_TSONLY
	if c.opts.Hardware {
		if c.opts.Interface == "" {
			return errors.New("sockts: hardware timestamps need an interface")
		}
		if err := hardwareOn(c.fd, c.opts.Interface, c.opts.RxFilters); err != nil {
			return err
		}
		// An AF_PACKET socket is bound to its interface already.
		if err := unix.BindToDevice(c.fd, c.opts.Interface); err != nil && !c.borrowed {
			return fmt.Errorf("sockts: SO_BINDTODEVICE %s: %w", c.opts.Interface, err)
		}
		flags |= unix.SOF_TIMESTAMPING_RX_HARDWARE | unix.SOF_TIMESTAMPING_TX_HARDWARE | unix.SOF_TIMESTAMPING_RAW_HARDWARE
	}
	// SO_TIMESTAMPING_NEW (Linux 5.1+) has 64-bit seconds everywhere; older
	// kernels (BeagleBone images with 4.19) and qemu-user only know the old
	// option, whose 32-bit ARM timespecs the parser reads too.
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING_NEW, flags); err != nil {
		if !errors.Is(err, unix.ENOPROTOOPT) {
			return fmt.Errorf("sockts: SO_TIMESTAMPING_NEW: %w", err)
		}
		err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING, flags)
		switch {
		case err == nil:
			c.option = "SO_TIMESTAMPING"
		case errors.Is(err, unix.ENOPROTOOPT) && !c.opts.Hardware:
			// No kernel timestamps at all (qemu-user, exotic kernels): measure
			// with user-space timestamps, each labelled SourceUser.
			c.option = "none"
			c.noTSReason = fmt.Errorf("sockts: the kernel refuses SO_TIMESTAMPING_NEW and SO_TIMESTAMPING: %w", err)
		default:
			return fmt.Errorf("sockts: SO_TIMESTAMPING: %w", err)
		}
	}
	return nil
}

// hardwareOn turns on the interface's hardware timestamps for filters. When
// another process (ptp4l, chronyd) has them on already with a receive filter
// that covers ours, it leaves the interface as it is: SIOCSHWTSTAMP is one
// setting per NIC, and changing it would change that process's timestamps.
func hardwareOn(fd int, iface string, filters []int32) error {
	info, err := unix.IoctlGetEthtoolTsInfo(fd, iface)
	if err != nil {
		return fmt.Errorf("sockts: interface %s has no hardware timestamping (ETHTOOL_GET_TS_INFO: %w)", iface, err)
	}
	cur, err := unix.IoctlGetHwTstamp(fd, iface)
	if err != nil {
		cur = nil // drivers without SIOCGHWTSTAMP: set ours
	}
	filter, keep, err := pickRxFilter(iface, cur, info, filters)
	if err != nil || keep {
		return err
	}
	cfg := unix.HwTstampConfig{Tx_type: unix.HWTSTAMP_TX_ON, Rx_filter: filter}
	if err := unix.IoctlSetHwTstamp(fd, iface, &cfg); err != nil {
		return fmt.Errorf("sockts: interface %s has no hardware timestamping (SIOCSHWTSTAMP: %w)", iface, err)
	}
	return nil
}

// pickRxFilter chooses the receive filter for filters (in order of
// preference): keep reports that the interface's current setting, cur (nil
// when unknown), already timestamps sends and covers one of them; else it is
// the first filter the interface's capabilities offer.
func pickRxFilter(iface string, cur *unix.HwTstampConfig, info *unix.EthtoolTsInfo, filters []int32) (filter int32, keep bool, err error) {
	if hw := timestampingOf(info).Hardware(); !hw.RX || !hw.TX {
		return 0, false, fmt.Errorf("sockts: interface %s has no hardware timestamping (capabilities %#x, tx types %#x, PHC index %d)", iface, info.So_timestamping, info.Tx_types, info.Phc_index)
	}
	if cur != nil && cur.Tx_type != unix.HWTSTAMP_TX_OFF {
		for _, f := range filters {
			if covers(cur.Rx_filter, f) {
				return cur.Rx_filter, true, nil
			}
		}
	}
	for _, f := range filters {
		if info.Rx_filters&(1<<uint(f)) != 0 {
			return f, false, nil
		}
	}
	return 0, false, fmt.Errorf("sockts: interface %s cannot timestamp the packets in hardware (rx filters %#x, none of %v)", iface, info.Rx_filters, filters)
}

// covers reports whether the receive filter have stamps every packet the
// filter want would: the same filter, HWTSTAMP_FILTER_ALL, or a PTPv2 filter
// that includes the wanted one (PTP_V2_EVENT covers the L2 and L4 event
// filters).
func covers(have, want int32) bool {
	switch {
	case have == want, have == unix.HWTSTAMP_FILTER_ALL:
		return true
	case have == unix.HWTSTAMP_FILTER_PTP_V2_EVENT:
		// Version 2 event messages over UDP (v4, v6) and IEEE 802.3.
		return want == unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT || want == unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT
	}
	return false
}

func sockaddr(a netip.AddrPort, v6 bool) (unix.Sockaddr, error) {
	if v6 {
		return &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}, nil
	}
	if !a.Addr().Is4() && !a.Addr().Is4In6() {
		return nil, fmt.Errorf("sockts: %s is not an IPv4 address", a)
	}
	return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().Unmap().As4()}, nil
}

// Option names the socket option in use: SO_TIMESTAMPING_NEW, SO_TIMESTAMPING on
// kernels without it, or "none" with the reason when the kernel gives no packet
// timestamps (every timestamp is then SourceUser).
func (c *Conn) Option() (string, error) { return c.option, c.noTSReason }

// LocalAddr returns the bound address.
func (c *Conn) LocalAddr() (netip.AddrPort, error) {
	sa, err := unix.Getsockname(c.fd)
	if err != nil {
		return netip.AddrPort{}, err
	}
	switch s := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(s.Addr), uint16(s.Port)), nil
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(s.Addr), uint16(s.Port)), nil
	}
	return netip.AddrPort{}, errors.New("sockts: unknown socket address")
}

// Close closes the socket (not one lent to FromFD).
func (c *Conn) Close() error {
	if c.borrowed {
		return nil
	}
	return unix.Close(c.fd)
}

// WriteTo sends b to addr and returns its transmit timestamp: hardware or
// software from the error queue when it arrives within TxWait, else the user-space
// time just before the send.
func (c *Conn) WriteTo(b []byte, to netip.AddrPort) (Timestamp, error) {
	var rsa4 unix.RawSockaddrInet4
	var rsa6 unix.RawSockaddrInet6
	var ptr unsafe.Pointer
	var salen uintptr
	if c.v6 {
		rsa6.Family = unix.AF_INET6
		rsa6.Port = htons(to.Port())
		rsa6.Addr = to.Addr().As16()
		ptr, salen = unsafe.Pointer(&rsa6), unsafe.Sizeof(rsa6)
	} else {
		rsa4.Family = unix.AF_INET
		rsa4.Port = htons(to.Port())
		rsa4.Addr = to.Addr().Unmap().As4()
		ptr, salen = unsafe.Pointer(&rsa4), unsafe.Sizeof(rsa4)
	}
	return c.send(b, ptr, salen, to)
}

// Write sends b on a socket that needs no address (FromFD's AF_PACKET socket:
// the frame names its destination) and returns its transmit timestamp as
// WriteTo does.
func (c *Conn) Write(b []byte) (Timestamp, error) {
	return c.send(b, nil, 0, netip.AddrPort{})
}

func (c *Conn) send(b []byte, ptr unsafe.Pointer, salen uintptr, to netip.AddrPort) (Timestamp, error) {
	key := c.sent
	if c.borrowed {
		c.drainErrQueue()
	}
	user := timebase.RealtimeNS()
	tries := 0
	for {
		_, _, e := unix.Syscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), 0, uintptr(ptr), salen)
		if e == unix.EINTR {
			continue
		}
		if e == unix.EAGAIN && tries < sendTries {
			// The socket's queue is full for a moment: wait for room, a
			// bounded number of times.
			tries++
			fds := [1]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLOUT}}
			_, _ = unix.Poll(fds[:], 10)
			continue
		}
		if e != 0 {
			if ptr == nil {
				return Timestamp{}, fmt.Errorf("sockts: send: %w", e)
			}
			return Timestamp{}, fmt.Errorf("sockts: sendto %s: %w", to, e)
		}
		break
	}
	c.sent++
	if c.noTSReason != nil {
		return Timestamp{NS: user, Source: SourceUser}, nil
	}
	if ts, ok := c.txTimestamp(key); ok {
		return ts, nil
	}
	return Timestamp{NS: user, Source: SourceUser}, nil
}

// txTimestamp waits up to TxWait for the error-queue timestamp of send key.
func (c *Conn) txTimestamp(key uint32) (Timestamp, bool) {
	deadline := time.Now().Add(c.opts.TxWait)
	for {
		_, _, err := c.recvmsg(&c.tx, c.errBuf, unix.MSG_ERRQUEUE)
		if err == nil {
			ctl := &c.tx.ctrl
			// Kernels before 6.x number an AF_PACKET socket's sends 0 always
			// (no OPT_ID there); its queue was drained before the send, so a
			// timestamp numbered 0 is this send's.
			if perr := c.layout.Parse(c.tx.oob[:c.tx.oobn], ctl); perr == nil && ctl.HaveTxKey &&
				(ctl.TxKey == key || (c.borrowed && ctl.TxKey == 0)) {
				if ctl.Hardware != 0 {
					return Timestamp{NS: ctl.Hardware, Source: SourceHardware}, true
				}
				if ctl.Software != 0 {
					return Timestamp{NS: ctl.Software, Source: SourceSoftware}, true
				}
			}
			continue // an older send's timestamp, or another kind: keep reading
		}
		if !errors.Is(err, unix.EAGAIN) {
			return Timestamp{}, false
		}
		left := time.Until(deadline)
		if left <= 0 {
			return Timestamp{}, false
		}
		// The error queue is signalled as POLLERR, which poll reports always.
		fds := [1]unix.PollFd{{Fd: int32(c.fd)}}
		if _, err := unix.Poll(fds[:], int(max(left/time.Millisecond, 1))); err != nil && !errors.Is(err, unix.EINTR) {
			return Timestamp{}, false
		}
	}
}

// drainErrQueue drops late transmit timestamps of earlier sends.
func (c *Conn) drainErrQueue() {
	for i := 0; i < 64; i++ {
		if _, _, err := c.recvmsg(&c.tx, c.errBuf, unix.MSG_ERRQUEUE); err != nil {
			return
		}
	}
}

// ReadFrom waits up to timeout for a datagram and returns its length, sender and
// receive timestamp (user space just after the read when the kernel gave none).
func (c *Conn) ReadFrom(b []byte, timeout time.Duration) (int, netip.AddrPort, Timestamp, error) {
	deadline := time.Now().Add(timeout)
	for {
		n, from, err := c.recvmsg(&c.rx, b, 0)
		if errors.Is(err, errOutgoing) {
			continue
		}
		if err == nil {
			user := timebase.RealtimeNS()
			ts := Timestamp{NS: user, Source: SourceUser}
			ctl := &c.rx.ctrl
			if perr := c.layout.Parse(c.rx.oob[:c.rx.oobn], ctl); perr == nil {
				if ctl.Hardware != 0 {
					ts = Timestamp{NS: ctl.Hardware, Source: SourceHardware}
				} else if ctl.Software != 0 {
					ts = Timestamp{NS: ctl.Software, Source: SourceSoftware}
				}
			}
			return n, from, ts, nil
		}
		if !errors.Is(err, unix.EAGAIN) {
			return 0, netip.AddrPort{}, Timestamp{}, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return 0, netip.AddrPort{}, Timestamp{}, ErrTimeout
		}
		fds := [1]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds[:], int(max(left/time.Millisecond, 1))); err != nil && !errors.Is(err, unix.EINTR) {
			return 0, netip.AddrPort{}, Timestamp{}, fmt.Errorf("sockts: poll: %w", err)
		}
		if fds[0].Revents&unix.POLLIN == 0 && fds[0].Revents&unix.POLLERR != 0 {
			// A transmit timestamp waits for the writer; do not spin on it.
			time.Sleep(200 * time.Microsecond)
		}
	}
}

// path is the control buffer of one direction.
type path struct {
	oob  []byte
	oobn int
	ctrl Control
}

// recvmsg reads one message (or one error-queue entry) into b and p's buffer.
func (c *Conn) recvmsg(p *path, b []byte, flags int) (int, netip.AddrPort, error) {
	var rsa unix.RawSockaddrAny
	var iov unix.Iovec
	iov.Base = unsafe.SliceData(b)
	iov.SetLen(len(b))
	var msg unix.Msghdr
	msg.Name = (*byte)(unsafe.Pointer(&rsa))
	msg.Namelen = uint32(unsafe.Sizeof(rsa))
	msg.Iov = &iov
	msg.Iovlen = 1
	msg.Control = unsafe.SliceData(p.oob)
	msg.SetControllen(len(p.oob))
	n, _, e := unix.Syscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags|unix.MSG_DONTWAIT))
	if e != 0 {
		if e == unix.EINTR {
			return c.recvmsg(p, b, flags)
		}
		return 0, netip.AddrPort{}, e
	}
	p.oobn = int(msg.Controllen)
	if rsa.Addr.Family == unix.AF_PACKET && flags&unix.MSG_ERRQUEUE == 0 &&
		(*unix.RawSockaddrLinklayer)(unsafe.Pointer(&rsa)).Pkttype == unix.PACKET_OUTGOING {
		return 0, netip.AddrPort{}, errOutgoing
	}
	return int(n), addrPort(&rsa), nil
}

// errOutgoing: an AF_PACKET socket's copy of a frame this host sent.
var errOutgoing = errors.New("outgoing frame")

func addrPort(rsa *unix.RawSockaddrAny) netip.AddrPort {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		p := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom4(p.Addr), ntohs(p.Port))
	case unix.AF_INET6:
		p := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return netip.AddrPortFrom(netip.AddrFrom16(p.Addr), ntohs(p.Port))
	}
	return netip.AddrPort{}
}

// htons returns v in network byte order as a sockaddr's port field holds it.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

func ntohs(v uint16) uint16 {
	var b [2]byte
	binary.NativeEndian.PutUint16(b[:], v)
	return binary.BigEndian.Uint16(b[:])
}
