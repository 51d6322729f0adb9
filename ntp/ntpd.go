package ntp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ntp/control"

	"github.com/monagent/monagent/timebase"
)

// Ntpd is a monitor of an ntpd (NTPsec, or NTP classic) over NTP mode 6
// control messages, ntpq's protocol: READSTAT for the system status and the
// list of associations, READVAR for the system variables and for each
// association's. The daemon answers mode 6 only to the addresses its
// `restrict` lines allow queries from (docs/deployment.md).
//
// It uses facebook/time's ntp/control for the message's layout and the
// status words, and does the exchange itself: control.NTPClient neither
// checks the sequence number nor reassembles fragments by their offsets. A
// reply to an earlier request is skipped and counted (Stale); a truncated,
// malformed or error reply ends the exchange with one error and is counted.
// Not safe for concurrent use.
type Ntpd struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	seq     uint16
	asm     ctlAssembly
	buf     []byte
	vars    []ctlVar

	// capture, when set (tests), sees each datagram received.
	capture func(op uint8, assoc uint16, pkt []byte)

	Requests     atomic.Uint64 // requests sent
	Stale        atomic.Uint64 // replies to another sequence number, skipped
	ErrorReplies atomic.Uint64 // replies with the error bit
	Truncated    atomic.Uint64 // datagrams shorter than their header or count
	Malformed    atomic.Uint64 // replies that are not what was asked, or lack or garble a variable the monitor needs
	Garbled      atomic.Uint64 // items of variable lists skipped as not clean text (parseCtlVars)
	Timeouts     atomic.Uint64 // no complete reply within the timeout
	Reconnects   atomic.Uint64
}

// NewNtpd returns a monitor of the ntpd at addr (host:port, UDP; not yet
// connected) that waits up to timeout for each reply.
func NewNtpd(addr string, timeout time.Duration) *Ntpd {
	if timeout <= 0 {
		timeout = time.Second
	}
	return &Ntpd{addr: addr, timeout: timeout, buf: make([]byte, 2048)}
}

// Addr is the daemon's address.
func (m *Ntpd) Addr() string { return m.addr }

// Close drops the socket.
func (m *Ntpd) Close() error {
	if m.conn == nil {
		return nil
	}
	err := m.conn.Close()
	m.conn = nil
	return err
}

func (m *Ntpd) connect() error {
	if m.conn != nil {
		return nil
	}
	c, err := net.DialTimeout("udp", m.addr, m.timeout)
	if err != nil {
		return fmt.Errorf("ntpd %s: %w", m.addr, opCause(err))
	}
	m.conn = c
	m.Reconnects.Add(1)
	return nil
}

// opName names a request in errors.
func opName(op uint8, assoc uint16) string {
	switch {
	case op == control.OpReadStatus:
		return "read status"
	case assoc == 0:
		return "read system variables"
	}
	return "read variables of association " + strconv.Itoa(int(assoc))
}

// exchange sends one request and returns the reassembled reply's data (valid
// until the next exchange), its status word and the REALTIME its last
// fragment arrived, waiting up to the monitor's timeout and no longer than
// ctx.
func (m *Ntpd) exchange(ctx context.Context, op uint8, assoc uint16) (data []byte, status uint16, arrivedNS int64, err error) {
	what := opName(op, assoc)
	if err := ctx.Err(); err != nil {
		return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %w", m.addr, what, err)
	}
	if err := m.connect(); err != nil {
		return nil, 0, 0, err
	}
	conn := m.conn
	deadline := time.Now().Add(m.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	// Cancellation ends the wait at once: a deadline in the past wakes the read.
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	m.seq++
	if m.seq == 0 {
		m.seq = 1
	}
	m.asm.reset(m.seq, op, assoc)
	m.Requests.Add(1)
	if _, err := conn.Write(ctlRequest(m.buf, op, m.seq, assoc)); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %w", m.addr, what, cerr)
		}
		m.Close()
		return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %w", m.addr, what, opCause(err))
	}
	for {
		n, err := conn.Read(m.buf)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %s: %w", m.addr, what, m.asm.missing(), cerr)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				m.Timeouts.Add(1)
				return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %s within %s: %w", m.addr, what, m.asm.missing(), m.timeout, opCause(err))
			}
			// ECONNREFUSED and the like: reconnect next time, ntpd may
			// have restarted.
			m.Close()
			return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %w", m.addr, what, opCause(err))
		}
		now := timebase.RealtimeNS()
		if m.capture != nil {
			m.capture(op, assoc, m.buf[:n])
		}
		done, err := m.asm.add(m.buf[:n])
		switch {
		case errors.Is(err, errCtlStale):
			m.Stale.Add(1)
			continue
		case errors.Is(err, ErrNtpdErrorReply):
			m.ErrorReplies.Add(1)
		case errors.Is(err, ErrNtpdTruncated):
			m.Truncated.Add(1)
		case err != nil:
			m.Malformed.Add(1)
		}
		if err != nil {
			return nil, 0, 0, fmt.Errorf("ntpd %s: %s: %w", m.addr, what, err)
		}
		if done {
			return m.asm.data, m.asm.status, now, nil
		}
	}
}

// readVars asks for the variables of assoc (0: the system's) and parses them;
// garbled is how many items were skipped (parseCtlVars).
func (m *Ntpd) readVars(ctx context.Context, assoc uint16) (vars []ctlVar, garbled int, status uint16, at int64, err error) {
	data, status, at, err := m.exchange(ctx, control.OpReadVariables, assoc)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	m.vars, garbled = parseCtlVars(data, m.vars[:0])
	m.Garbled.Add(uint64(garbled))
	return m.vars, garbled, status, at, nil
}

// MaxNtpdPeers is the most associations one Status reads; the rest are
// counted in NtpdStatus.PeersSkipped.
const MaxNtpdPeers = 64

// NtpdStatus is one look at ntpd: its system variables and each
// association's, every part stamped with when its reply arrived.
type NtpdStatus struct {
	System *NtpdSystem // nil when not answered
	Peers  []NtpdPeer  // those answered before any failure, in ntpd's order
	// PeersSkipped is how many associations beyond MaxNtpdPeers were not read.
	PeersSkipped int
}

// Status asks ntpd for its association list (READSTAT), its system variables
// and then each association's variables, and stops at the first failure: the
// parts answered before are returned with the error.
func (m *Ntpd) Status(ctx context.Context) (NtpdStatus, error) {
	var st NtpdStatus
	data, _, _, err := m.exchange(ctx, control.OpReadStatus, 0)
	if err != nil {
		return st, err
	}
	assocs, err := associationsOf(data)
	if err != nil {
		m.Malformed.Add(1)
		return st, fmt.Errorf("ntpd %s: read status: %w", m.addr, err)
	}
	if len(assocs) > MaxNtpdPeers {
		st.PeersSkipped = len(assocs) - MaxNtpdPeers
		assocs = assocs[:MaxNtpdPeers]
	}
	vars, garbled, status, at, err := m.readVars(ctx, 0)
	if err != nil {
		return st, err
	}
	sys, err := systemOf(status, vars)
	sys.Garbled = garbled
	if err != nil {
		m.Malformed.Add(1)
		return st, fmt.Errorf("ntpd %s: %w", m.addr, err)
	}
	sys.TimeNS = at
	st.System = &sys
	for _, a := range assocs {
		vars, garbled, status, at, err := m.readVars(ctx, a[0])
		if err != nil {
			return st, err
		}
		p, err := peerOf(a[0], status, vars)
		p.Garbled = garbled
		if err != nil {
			m.Malformed.Add(1)
			return st, fmt.Errorf("ntpd %s: %w", m.addr, err)
		}
		p.TimeNS = at
		st.Peers = append(st.Peers, p)
	}
	return st, nil
}
