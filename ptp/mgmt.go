package ptp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ptp/protocol"
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
	clientSocket
	domain  uint8
	timeout time.Duration
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
	return &Monitor{clientSocket: clientSocket{socket: socket, local: localSocket("", socket, "pmc", monSeq.Add(1))},
		domain: domain, timeout: timeout}
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
	if err := m.dial(); err != nil {
		return fmt.Errorf("ptp4l %s: %w", m.socket, err)
	}
	m.Reconnects.Add(1)
	return nil
}

// Close releases the monitor's socket.
func (m *Monitor) Close() error { return m.hangUp() }

// request builds a GET of id with an empty dataset (as pmc -z does).
func (m *Monitor) request(id protocol.ManagementID) ([]byte, error) {
	m.seq++
	return managementMessage(requestHead(m.seq, m.domain), id, nil)
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
		head, ok := decodeHead(reply)
		if !ok {
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

// PortDataSet asks for PORT_DATA_SET.
func (m *Monitor) PortDataSet(ctx context.Context) (PortDataSet, error) {
	reply, err := m.get(ctx, protocol.IDPortDataSet)
	if err != nil {
		return PortDataSet{}, err
	}
	// An error status TLV comes back as one.
	if isErrorStatus(reply) {
		_, err := m.decode(reply)
		return PortDataSet{}, err
	}
	p, err := DecodePortDataSet(reply)
	if err != nil {
		return p, fmt.Errorf("ptp4l %s: %w", m.socket, err)
	}
	return p, nil
}
