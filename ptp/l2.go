package ptp

import (
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/mdlayher/ethernet"
)

// PTP over IEEE 802.3 (IEEE 1588 annex F).
const EtherType ethernet.EtherType = 0x88F7

// L2Group is the multicast address of every PTP message but the peer-delay
// ones (annex F).
var L2Group = net.HardwareAddr{0x01, 0x1b, 0x19, 0x00, 0x00, 0x00}

// l2Payload returns the PTP message of an Ethernet frame: the frame's payload
// (after any VLAN tags) cut to the message's own length, since frames under
// 60 bytes arrive padded. ok is false for a frame that is not PTP or too short
// for an Ethernet header.
func l2Payload(frame []byte) (b []byte, ok bool) {
	const hdr = 14
	off := 12
	if len(frame) < hdr {
		return nil, false
	}
	et := ethernet.EtherType(binary.BigEndian.Uint16(frame[off:]))
	// Up to two tags (802.1ad service VLAN, 802.1Q), as mdlayher/ethernet reads.
	for i := 0; i < 2 && (et == ethernet.EtherTypeVLAN || et == ethernet.EtherTypeServiceVLAN); i++ {
		off += 4
		if len(frame) < off+2 {
			return nil, false
		}
		et = ethernet.EtherType(binary.BigEndian.Uint16(frame[off:]))
	}
	if et != EtherType {
		return nil, false
	}
	b = frame[off+2:]
	if len(b) >= 4 {
		if n := int(binary.BigEndian.Uint16(b[2:])); n >= headerSize && n <= len(b) {
			b = b[:n]
		}
	}
	return b, true
}

// l2Frame builds the Ethernet frame of msg from src to the PTP group.
func l2Frame(src net.HardwareAddr, msg []byte) ([]byte, error) {
	f := ethernet.Frame{Destination: L2Group, Source: src, EtherType: EtherType, Payload: msg}
	return f.MarshalBinary()
}

// L2Config configures a probe over IEEE 802.3.
type L2Config struct {
	Interface string
	Domain    uint8
	TxWait    time.Duration
	Hardware  bool // as UDPConfig.Hardware
	NoWarmUp  bool // as UDPConfig.NoWarmUp
}

// ErrNoRawSocket is returned when the process may not open raw sockets.
var ErrNoRawSocket = errors.New("PTP over IEEE 802.3 needs a raw socket: run as root or grant CAP_NET_RAW (setcap cap_net_raw+ep monagent, or AmbientCapabilities=CAP_NET_RAW in the systemd unit)")
