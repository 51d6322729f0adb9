package ptp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/internal/closing"
)

// IDPortServiceStatsNP and the other linuxptp IDs the monitor asks for.
const (
	IDTimeStatusNP       protocol.ManagementID = 0xC000
	IDPortStatsNP        protocol.ManagementID = 0xC005
	IDPortServiceStatsNP protocol.ManagementID = 0xC007
)

// ErrUnsupported means ptp4l answered NO_SUCH_ID (or NOT_SUPPORTED) for a
// dataset: that version does not have it.
var ErrUnsupported = errors.New("ptp4l does not support this management id")

// Monitor asks one ptp4l for its datasets.
type Monitor struct {
	socket  string
	domain  uint8
	timeout time.Duration
	conn    *net.UnixConn
	local   string
	seq     uint16
	buf     [1500]byte

	Foreign    atomic.Uint64 // replies to other requests, discarded
	Errors     atomic.Uint64 // management error status replies
	Reconnects atomic.Uint64
	// ServiceStatsUnsupported: ptp4l answered that it has no
	// PORT_SERVICE_STATS_NP (linuxptp 3.x); Status no longer asks for it.
	ServiceStatsUnsupported atomic.Bool
}

var monSeq atomic.Uint64

// NewMonitor returns a monitor of the ptp4l whose uds_address is socket. Its
// own socket, bound beside ptp4l's while connected, has one name for the
// monitor's life (the process id and a per-process number), so that its
// errors read the same each time and no name is left behind.
func NewMonitor(socket string, domain uint8, timeout time.Duration) *Monitor {
	if timeout <= 0 {
		timeout = time.Second
	}
	local := filepath.Join(filepath.Dir(socket), fmt.Sprintf("monagent-pmc.%d.%d", os.Getpid(), monSeq.Add(1)))
	return &Monitor{socket: socket, domain: domain, timeout: timeout, local: local}
}

// BindIn puts the monitor's own socket in dir rather than beside ptp4l's:
// a directory the agent may write (its runtime directory, when the unit
// makes /run read-only) and ptp4l may answer into. Call it before the
// first Status.
func (m *Monitor) BindIn(dir string) {
	if dir != "" {
		m.local = filepath.Join(dir, filepath.Base(m.local))
	}
}

// LocalSocket is the path the monitor binds while connected.
func (m *Monitor) LocalSocket() string { return m.local }

func (m *Monitor) connect() error {
	if m.conn != nil {
		return nil
	}
	os.Remove(m.local)
	c, err := net.DialUnix("unixgram", &net.UnixAddr{Name: m.local, Net: "unixgram"}, &net.UnixAddr{Name: m.socket, Net: "unixgram"})
	if err != nil {
		// The socket was bound before the connect failed: never leave it.
		os.Remove(m.local)
		return fmt.Errorf("ptp4l %s: %w", m.socket, opCause(err))
	}
	m.conn = c
	m.Reconnects.Add(1)
	return nil
}

// opCause is a net operation's cause without its addresses (our socket's
// name among them), so that one fault reads the same every time.
func opCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// Close releases the monitor's socket.
func (m *Monitor) Close() error {
	if m.conn == nil {
		return nil
	}
	defer os.Remove(m.local)
	return closing.Clear(&m.conn)
}

// emptyTLV is a GET request's TLV: the management id and no data.
type emptyTLV struct{ protocol.ManagementTLVHead }

// request builds a GET of id with an empty dataset (as pmc -z does).
func (m *Monitor) request(id protocol.ManagementID) ([]byte, error) {
	base := protocol.CurrentDataSetRequest()
	head := base.ManagementMsgHead
	head.MessageLength = uint16(binary.Size(protocol.ManagementMsgHead{}) + binary.Size(protocol.ManagementTLVHead{}))
	m.seq++
	head.SetSequence(m.seq)
	head.SetDomainNumber(m.domain)
	req := &protocol.Management{ManagementMsgHead: head, TLV: &emptyTLV{protocol.ManagementTLVHead{
		TLVHead: protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: 2}, ManagementID: id}}}
	return req.MarshalBinary()
}

// get sends a GET of id and returns the reply whose sequence id matches. It
// waits up to the monitor's timeout, and no longer than ctx.
func (m *Monitor) get(ctx context.Context, id protocol.ManagementID) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ptp4l %s: GET 0x%04x: %w", m.socket, uint16(id), err)
	}
	if err := m.connect(); err != nil {
		return nil, err
	}
	req, err := m.request(id)
	if err != nil {
		return nil, err
	}
	conn := m.conn
	conn.SetDeadline(time.Now().Add(m.timeout))
	// Cancellation ends the wait at once: a deadline in the past wakes the read.
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	if _, err := conn.Write(req); err != nil {
		m.Close()
		return nil, fmt.Errorf("ptp4l %s: %w", m.socket, causeOr(ctx, opCause(err)))
	}
	for {
		n, err := conn.Read(m.buf[:])
		if err != nil {
			m.Close() // reconnect next time: ptp4l may have restarted
			return nil, fmt.Errorf("ptp4l %s: GET 0x%04x: %w", m.socket, uint16(id), causeOr(ctx, opCause(err)))
		}
		reply := m.buf[:n]
		var head protocol.ManagementMsgHead
		if err := binary.Read(bytes.NewReader(reply), binary.BigEndian, &head); err != nil {
			return nil, fmt.Errorf("ptp4l %s: short management reply (%d bytes)", m.socket, n)
		}
		if head.SequenceID != m.seq || head.MessageType() != protocol.MessageManagement {
			m.Foreign.Add(1)
			continue
		}
		return reply, nil
	}
}

// decode decodes a reply with the library's decoders, turning error status
// TLVs into errors (NO_SUCH_ID and NOT_SUPPORTED into ErrUnsupported).
func (m *Monitor) decode(reply []byte) (protocol.ManagementTLV, error) {
	var p protocol.Management
	err := p.UnmarshalBinary(reply)
	if errors.Is(err, protocol.ErrManagementMsgErrorStatus) {
		m.Errors.Add(1)
		var e protocol.ManagementMsgErrorStatus
		if err := e.UnmarshalBinary(reply); err != nil {
			return nil, fmt.Errorf("ptp4l %s: undecodable management error: %w", m.socket, err)
		}
		if e.ManagementErrorID == protocol.ErrorNoSuchID || e.ManagementErrorID == protocol.ErrorNotSupported {
			return nil, fmt.Errorf("ptp4l %s: %w (%v)", m.socket, ErrUnsupported, e.ManagementErrorID)
		}
		return nil, fmt.Errorf("ptp4l %s: management error %v", m.socket, e.ManagementErrorID)
	}
	if err != nil {
		return nil, fmt.Errorf("ptp4l %s: %w", m.socket, err)
	}
	return p.TLV, nil
}

// causeOr is ctx's error when ctx ended the wait, else err.
func causeOr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

func getTLV[T protocol.ManagementTLV](ctx context.Context, m *Monitor, id protocol.ManagementID) (T, error) {
	var zero T
	reply, err := m.get(ctx, id)
	if err != nil {
		return zero, err
	}
	tlv, err := m.decode(reply)
	if err != nil {
		return zero, err
	}
	t, ok := tlv.(T)
	if !ok {
		return zero, fmt.Errorf("ptp4l %s: GET 0x%04x answered with %T", m.socket, uint16(id), tlv)
	}
	return t, nil
}

// CurrentDataSet is CURRENT_DATA_SET: offsetFromMaster, meanPathDelay, stepsRemoved.
func (m *Monitor) CurrentDataSet(ctx context.Context) (*protocol.CurrentDataSetTLV, error) {
	return getTLV[*protocol.CurrentDataSetTLV](ctx, m, protocol.IDCurrentDataSet)
}

// ParentDataSet is PARENT_DATA_SET.
func (m *Monitor) ParentDataSet(ctx context.Context) (*protocol.ParentDataSetTLV, error) {
	return getTLV[*protocol.ParentDataSetTLV](ctx, m, protocol.IDParentDataSet)
}

// DefaultDataSet is DEFAULT_DATA_SET.
func (m *Monitor) DefaultDataSet(ctx context.Context) (*protocol.DefaultDataSetTLV, error) {
	return getTLV[*protocol.DefaultDataSetTLV](ctx, m, protocol.IDDefaultDataSet)
}

// TimeStatusNP is linuxptp's TIME_STATUS_NP.
func (m *Monitor) TimeStatusNP(ctx context.Context) (*protocol.TimeStatusNPTLV, error) {
	return getTLV[*protocol.TimeStatusNPTLV](ctx, m, IDTimeStatusNP)
}

// PortStatsNP is linuxptp's PORT_STATS_NP (message counters).
func (m *Monitor) PortStatsNP(ctx context.Context) (*protocol.PortStatsNPTLV, error) {
	return getTLV[*protocol.PortStatsNPTLV](ctx, m, IDPortStatsNP)
}

// PortServiceStatsNP is linuxptp 4.x's PORT_SERVICE_STATS_NP; ErrUnsupported on 3.x.
func (m *Monitor) PortServiceStatsNP(ctx context.Context) (*protocol.PortServiceStatsNPTLV, error) {
	return getTLV[*protocol.PortServiceStatsNPTLV](ctx, m, IDPortServiceStatsNP)
}

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

// PortDataSet asks for PORT_DATA_SET.
func (m *Monitor) PortDataSet(ctx context.Context) (PortDataSet, error) {
	reply, err := m.get(ctx, protocol.IDPortDataSet)
	if err != nil {
		return PortDataSet{}, err
	}
	// An error status TLV comes back as one.
	if len(reply) > binary.Size(protocol.ManagementMsgHead{})+2 &&
		protocol.TLVType(binary.BigEndian.Uint16(reply[binary.Size(protocol.ManagementMsgHead{}):])) == protocol.TLVManagementErrorStatus {
		_, err := m.decode(reply)
		return PortDataSet{}, err
	}
	p, err := DecodePortDataSet(reply)
	if err != nil {
		return p, fmt.Errorf("ptp4l %s: %w", m.socket, err)
	}
	return p, nil
}
