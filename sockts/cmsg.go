package sockts

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unsafe"
)

// Source says where a timestamp came from.
type Source uint8

// Timestamp sources, best last.
const (
	SourceNone     Source = iota
	SourceUser            // user space, around the system call
	SourceSoftware        // the kernel (REALTIME)
	SourceHardware        // the NIC (its PHC's clock)
)

func (s Source) String() string {
	switch s {
	case SourceNone:
		return "none"
	case SourceUser:
		return "user"
	case SourceSoftware:
		return "software"
	case SourceHardware:
		return "hardware"
	}
	return "source(" + strconv.Itoa(int(s)) + ")"
}

// Timestamp is a packet timestamp in nanoseconds. Software and user timestamps
// count CLOCK_REALTIME; hardware ones count the NIC's PHC.
type Timestamp struct {
	NS     int64
	Source Source
}

// Layout is a cmsghdr layout: the header size and the alignment of CMSG_ALIGN.
type Layout struct {
	HeaderLen int // sizeof(struct cmsghdr)
	Align     int // sizeof(size_t)
}

// The two cmsghdr layouts of the targets.
var (
	LayoutLP64  = Layout{HeaderLen: 16, Align: 8} // amd64, arm64
	LayoutILP32 = Layout{HeaderLen: 12, Align: 4} // arm (ARMv7), 386
)

// NativeLayout is the layout of this build.
func NativeLayout() Layout {
	if unsafe.Sizeof(uintptr(0)) == 8 {
		return LayoutLP64
	}
	return LayoutILP32
}

// Kernel constants the parser needs (identical on every Linux architecture).
const (
	solSocket          = 1
	solIP              = 0
	solIPv6            = 41
	soTimestampingOld  = 37 // SO_TIMESTAMPING (old): struct timespec, arch-sized
	soTimestampingNew  = 65 // SO_TIMESTAMPING_NEW: struct __kernel_timespec, 64-bit
	ipRecvErr          = 11
	ipv6RecvErr        = 25
	solPacket          = 263
	packetTxTimestamp  = 16 // PACKET_TX_TIMESTAMP: an AF_PACKET socket's sock_extended_err
	eeOriginTimestamp  = 4  // SO_EE_ORIGIN_TIMESTAMPING
	sockExtendedErrLen = 16
)

// Control is what the parser found in a control buffer.
type Control struct {
	Software int64 // scm_timestamping ts[0], 0 when absent
	Hardware int64 // scm_timestamping ts[2] (raw hardware), 0 when absent
	// From the error queue: the sock_extended_err of a transmit timestamp.
	HaveTxKey bool
	TxKey     uint32 // ee_data: the SOF_TIMESTAMPING_OPT_ID counter of the send
	TxType    uint32 // ee_info: SCM_TSTAMP_SND (0), SCM_TSTAMP_SCHED (1), SCM_TSTAMP_ACK (2)
}

// ErrMalformed is returned for a control buffer that is not a valid sequence of
// control messages.
var ErrMalformed = errors.New("malformed control message")

// Parse reads the timestamping and extended-error control messages in oob into
// c, without allocating. Unknown messages are skipped.
func (l Layout) Parse(oob []byte, c *Control) error {
	*c = Control{}
	off := 0
	for off+l.HeaderLen <= len(oob) {
		var length int
		if l.HeaderLen == 16 {
			length = int(binary.NativeEndian.Uint64(oob[off:]))
			if uint64(length) != binary.NativeEndian.Uint64(oob[off:]) {
				length = -1
			}
		} else {
			length = int(binary.NativeEndian.Uint32(oob[off:]))
		}
		if length < l.HeaderLen || length > len(oob)-off {
			return fmt.Errorf("%w: length %d at offset %d of %d", ErrMalformed, length, off, len(oob))
		}
		level := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-8:]))
		typ := int32(binary.NativeEndian.Uint32(oob[off+l.HeaderLen-4:]))
		data := oob[off+l.HeaderLen : off+length]
		switch {
		case level == solSocket && typ == soTimestampingNew:
			if len(data) < 48 {
				return fmt.Errorf("%w: scm_timestamping64 of %d bytes", ErrMalformed, len(data))
			}
			c.Software = timespec64(data[0:])
			c.Hardware = timespec64(data[32:])
		case level == solSocket && typ == soTimestampingOld:
			switch len(data) {
			case 48: // 64-bit time_t
				c.Software = timespec64(data[0:])
				c.Hardware = timespec64(data[32:])
			case 24: // 32-bit time_t (ILP32 without time64)
				c.Software = timespec32(data[0:])
				c.Hardware = timespec32(data[16:])
			default:
				return fmt.Errorf("%w: scm_timestamping of %d bytes", ErrMalformed, len(data))
			}
		case (level == solIP && typ == ipRecvErr) || (level == solIPv6 && typ == ipv6RecvErr) || (level == solPacket && typ == packetTxTimestamp):
			if len(data) < sockExtendedErrLen {
				return fmt.Errorf("%w: sock_extended_err of %d bytes", ErrMalformed, len(data))
			}
			if data[4] == eeOriginTimestamp { // ee_origin
				c.HaveTxKey = true
				c.TxType = binary.NativeEndian.Uint32(data[8:])
				c.TxKey = binary.NativeEndian.Uint32(data[12:])
			}
		}
		off += (length + l.Align - 1) &^ (l.Align - 1)
	}
	return nil
}

func timespec64(b []byte) int64 {
	sec := int64(binary.NativeEndian.Uint64(b))
	nsec := int64(binary.NativeEndian.Uint64(b[8:]))
	return sec*1_000_000_000 + nsec
}

// timespec32 reads a 32-bit time_t timespec (a 32-bit kernel without
// SO_TIMESTAMPING_NEW). Its seconds wrap in January 2038 to negative values;
// packet timestamps are never before 1970, so they are read unsigned, which
// is right until 2106.
func timespec32(b []byte) int64 {
	sec := int64(binary.NativeEndian.Uint32(b))
	nsec := int64(int32(binary.NativeEndian.Uint32(b[4:])))
	return sec*1_000_000_000 + nsec
}
