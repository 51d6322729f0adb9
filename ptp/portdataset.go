package ptp

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/facebook/time/ptp/protocol"
)

// PortDataSet is PORT_DATA_SET (IEEE 1588-2008 table 83), which the library
// does not decode.
type PortDataSet struct {
	PortIdentity            protocol.PortIdentity
	PortState               protocol.PortState
	LogMinDelayReqInterval  int8
	PeerMeanPathDelayNS     int64
	LogAnnounceInterval     int8
	AnnounceReceiptTimeout  uint8
	LogSyncInterval         int8
	DelayMechanism          uint8
	LogMinPdelayReqInterval int8
	VersionNumber           uint8
}

// PortDataSetSize is the dataset's size after the management TLV head.
const PortDataSetSize = 26

// ErrShortTLV is a management TLV shorter than its dataset.
var ErrShortTLV = errors.New("management TLV too short")

// DecodePortDataSet decodes a PORT_DATA_SET reply (the whole management message).
func DecodePortDataSet(reply []byte) (PortDataSet, error) {
	off := binary.Size(protocol.ManagementMsgHead{})
	if len(reply) < off+6 {
		return PortDataSet{}, fmt.Errorf("%w: %d bytes", ErrShortTLV, len(reply))
	}
	be := binary.BigEndian
	typ, length, id := protocol.TLVType(be.Uint16(reply[off:])), int(be.Uint16(reply[off+2:])), protocol.ManagementID(be.Uint16(reply[off+4:]))
	if typ != protocol.TLVManagement || id != protocol.IDPortDataSet {
		return PortDataSet{}, fmt.Errorf("not a PORT_DATA_SET TLV: type %v id 0x%04x", typ, uint16(id))
	}
	d := reply[off+6:]
	if length-2 < PortDataSetSize || len(d) < PortDataSetSize {
		return PortDataSet{}, fmt.Errorf("%w: PORT_DATA_SET length %d, %d bytes", ErrShortTLV, length, len(d))
	}
	var p PortDataSet
	p.PortIdentity.ClockIdentity = protocol.ClockIdentity(be.Uint64(d[0:8]))
	p.PortIdentity.PortNumber = be.Uint16(d[8:])
	p.PortState = protocol.PortState(d[10])
	p.LogMinDelayReqInterval = int8(d[11])
	p.PeerMeanPathDelayNS = int64(be.Uint64(d[12:])) >> 16
	p.LogAnnounceInterval = int8(d[20])
	p.AnnounceReceiptTimeout = d[21]
	p.LogSyncInterval = int8(d[22])
	p.DelayMechanism = d[23]
	p.LogMinPdelayReqInterval = int8(d[24])
	p.VersionNumber = d[25] & 0x0f
	return p, nil
}
