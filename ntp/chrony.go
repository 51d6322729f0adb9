package ntp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ntp/chrony"

	"github.com/monagent/monagent/internal/closing"
)

// Chrony monitors chronyd over its command protocol, through the Unix command
// socket (an absolute path; needed for ntpdata and serverstats, which chronyd
// answers only there) or UDP (host:port, usually 127.0.0.1:323). A failed
// request drops the connection; the next request reconnects, so a restarted
// chronyd is picked up again.
//
// Over the command socket chronyd answers to the sender's address, so the
// monitor binds a client socket of its own in a directory it is given (the
// agent's runtime directory, /run/monagent under systemd): chronyd, which has
// dropped its privileges to its own user, must be able to reach it, so the
// directory must be searchable by that user (mode 0755) and visible from
// chronyd's mount namespace (not a PrivateTmp /tmp). The socket itself is made
// writable by everyone, as chronyc does with its own.
type Chrony struct {
	addr    string
	dir     string // where the client socket is bound (Unix only)
	timeout time.Duration
	conn    net.Conn
	local   string // our bound socket path (Unix only)
	client  *chrony.Client

	Reconnects atomic.Uint64
}

// NewChrony returns a monitor of the chronyd at addr (not yet connected) whose
// client socket, over the command socket, is bound in dir. The socket's name
// is the monitor's for its life (unique per process and monitor), so that its
// errors read the same each time.
func NewChrony(addr, dir string, timeout time.Duration) *Chrony {
	if timeout <= 0 {
		timeout = time.Second
	}
	m := &Chrony{addr: addr, dir: dir, timeout: timeout}
	if dir != "" {
		m.local = filepath.Join(dir, fmt.Sprintf("chronyc-%d-%08x.sock", os.Getpid(), rand.Uint32()))
	}
	return m
}

// LocalSocket is the path of the client socket while connected over the
// command socket ("" otherwise).
func (m *Chrony) LocalSocket() string {
	if m.conn == nil {
		return ""
	}
	return m.local
}

// Unix reports whether the monitor uses the command socket.
func (m *Chrony) Unix() bool { return strings.HasPrefix(m.addr, "/") }

func (m *Chrony) connect() error {
	if m.conn != nil {
		return nil
	}
	var err error
	if m.Unix() {
		// chronyd answers to the sender's address: bind a socket of our own,
		// writable by chronyd after it drops privileges (as chronyc does). The
		// name is unique per process and monitor without shared state.
		if m.dir == "" {
			return fmt.Errorf("chronyd %s: no directory for the client socket", m.addr)
		}
		os.Remove(m.local) // one a connection that was never closed left
		var c *net.UnixConn
		c, err = net.DialUnix("unixgram", &net.UnixAddr{Name: m.local, Net: "unixgram"}, &net.UnixAddr{Name: m.addr, Net: "unixgram"})
		if err == nil {
			if cerr := os.Chmod(m.local, 0o666); cerr != nil {
				c.Close()
				os.Remove(m.local)
				return fmt.Errorf("chronyd %s: client socket: %w", m.addr, cerr)
			}
			m.conn = c
		} else {
			os.Remove(m.local) // bound before the connect failed
		}
	} else {
		m.conn, err = net.DialTimeout("udp", m.addr, m.timeout)
	}
	if err != nil {
		m.conn = nil
		return fmt.Errorf("chronyd %s: %w", m.addr, opCause(err))
	}
	m.Reconnects.Add(1)
	m.client = &chrony.Client{Connection: m.conn}
	return nil
}

// Close drops the connection.
func (m *Chrony) Close() error {
	if m.conn == nil {
		return nil
	}
	if m.local != "" {
		defer os.Remove(m.local)
	}
	return closing.Clear(&m.conn)
}

// sequenceOf returns a reply's sequence number. Every reply the library
// decodes embeds chrony.ReplyHead, whose Sequence has no accessor in the
// ResponsePacket interface: it is read from the embedded head by reflection,
// once a reply (a poll's few requests, no hot path).
func sequenceOf(r chrony.ResponsePacket) (uint32, bool) {
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return 0, false
	}
	f := v.Elem().FieldByName("ReplyHead")
	if !f.IsValid() || !f.CanInterface() {
		return 0, false
	}
	head, ok := f.Interface().(chrony.ReplyHead)
	return head.Sequence, ok
}

// ErrStale is a reply to an earlier request (its sequence number is not ours).
var ErrStale = errors.New("reply to another request")

// opCause is a net operation's cause without its addresses (our socket's
// name among them), so that one fault reads the same every time.
func opCause(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// do sends req and returns chronyd's answer, waiting up to the monitor's
// timeout and no longer than ctx.
func (m *Chrony) do(ctx context.Context, req chrony.RequestPacket) (chrony.ResponsePacket, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("chronyd %s: %w", m.addr, err)
	}
	if err := m.connect(); err != nil {
		return nil, err
	}
	conn := m.conn
	conn.SetDeadline(time.Now().Add(m.timeout))
	// Cancellation ends the wait at once: a deadline in the past wakes the read.
	defer context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })()
	for attempt := 0; ; attempt++ {
		resp, err := m.client.Communicate(req)
		if err != nil {
			m.Close() // reconnect next time: chronyd may have restarted
			if cerr := ctx.Err(); cerr != nil {
				err = cerr
			}
			return nil, fmt.Errorf("chronyd %s: %w", m.addr, opCause(err))
		}
		if seq, ok := sequenceOf(resp); ok && seq != m.client.Sequence {
			if attempt < 2 {
				continue // a late answer to a request that timed out: ask again
			}
			return nil, fmt.Errorf("chronyd %s: %w (sequence %d, sent %d)", m.addr, ErrStale, seq, m.client.Sequence)
		}
		return resp, nil
	}
}

// Tracking is chronyc tracking.
func (m *Chrony) Tracking(ctx context.Context) (chrony.Tracking, error) {
	resp, err := m.do(ctx, chrony.NewTrackingPacket())
	if err != nil {
		return chrony.Tracking{}, err
	}
	t, ok := resp.(*chrony.ReplyTracking)
	if !ok {
		return chrony.Tracking{}, fmt.Errorf("chronyd %s: tracking answered with %T", m.addr, resp)
	}
	return t.Tracking, nil
}

// Source is one of chronyd's sources with its statistics and, over the command
// socket, the last NTP exchange's data.
type Source struct {
	Data    chrony.SourceData
	Stats   *chrony.SourceStats // nil when chronyd has none yet
	NTPData *chrony.NTPData     // nil over UDP, for reference clocks, or when refused
}

// Sources is chronyc sources, sourcestats and ntpdata for every source.
func (m *Chrony) Sources(ctx context.Context) ([]Source, error) {
	resp, err := m.do(ctx, chrony.NewSourcesPacket())
	if err != nil {
		return nil, err
	}
	n, ok := resp.(*chrony.ReplySources)
	if !ok {
		return nil, fmt.Errorf("chronyd %s: sources answered with %T", m.addr, resp)
	}
	var out []Source
	for i := 0; i < n.NSources; i++ {
		resp, err := m.do(ctx, chrony.NewSourceDataPacket(int32(i)))
		if err != nil {
			return out, err
		}
		sd, ok := resp.(*chrony.ReplySourceData)
		if !ok {
			return out, fmt.Errorf("chronyd %s: source data answered with %T", m.addr, resp)
		}
		s := Source{Data: sd.SourceData}
		if resp, err := m.do(ctx, chrony.NewSourceStatsPacket(int32(i))); err == nil {
			if st, ok := resp.(*chrony.ReplySourceStats); ok {
				s.Stats = &st.SourceStats
			}
		} else if m.conn == nil {
			return out, err
		}
		if m.Unix() && sd.Mode != chrony.SourceModeRef {
			if resp, err := m.do(ctx, chrony.NewNTPDataPacket(sd.IPAddr)); err == nil {
				if nd, ok := resp.(*chrony.ReplyNTPData); ok {
					s.NTPData = &nd.NTPData
				}
			} else if m.conn == nil {
				return out, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// ServerStats are chronyd's server counters (NTP and command requests, drops).
type ServerStats struct {
	NTPHits, NKEHits, CMDHits, NTPDrops, NKEDrops, CMDDrops, LogDrops uint64
	NTPAuthHits, NTPInterleavedHits, NTPTimestamps, NTPSpanSeconds    uint64
}

// ServerStats is chronyc serverstats (command socket only); chronyd versions
// answer with different reply formats, all mapped here.
func (m *Chrony) ServerStats(ctx context.Context) (ServerStats, error) {
	resp, err := m.do(ctx, chrony.NewServerStatsPacket())
	if err != nil {
		return ServerStats{}, err
	}
	switch r := resp.(type) {
	case *chrony.ReplyServerStats:
		return ServerStats{NTPHits: uint64(r.NTPHits), CMDHits: uint64(r.CMDHits), NTPDrops: uint64(r.NTPDrops), CMDDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops)}, nil
	case *chrony.ReplyServerStats2:
		return ServerStats{NTPHits: uint64(r.NTPHits), NKEHits: uint64(r.NKEHits), CMDHits: uint64(r.CMDHits), NTPDrops: uint64(r.NTPDrops),
			NKEDrops: uint64(r.NKEDrops), CMDDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops), NTPAuthHits: uint64(r.NTPAuthHits)}, nil
	case *chrony.ReplyServerStats3:
		return ServerStats{NTPHits: uint64(r.NTPHits), NKEHits: uint64(r.NKEHits), CMDHits: uint64(r.CMDHits), NTPDrops: uint64(r.NTPDrops),
			NKEDrops: uint64(r.NKEDrops), CMDDrops: uint64(r.CMDDrops), LogDrops: uint64(r.LogDrops), NTPAuthHits: uint64(r.NTPAuthHits),
			NTPInterleavedHits: uint64(r.NTPInterleavedHits), NTPTimestamps: uint64(r.NTPTimestamps), NTPSpanSeconds: uint64(r.NTPSpanSeconds)}, nil
	case *chrony.ReplyServerStats4:
		return ServerStats{NTPHits: r.NTPHits, NKEHits: r.NKEHits, CMDHits: r.CMDHits, NTPDrops: r.NTPDrops,
			NKEDrops: r.NKEDrops, CMDDrops: r.CMDDrops, LogDrops: r.LogDrops, NTPAuthHits: r.NTPAuthHits,
			NTPInterleavedHits: r.NTPInterleavedHits, NTPTimestamps: r.NTPTimestamps, NTPSpanSeconds: r.NTPSpanSeconds}, nil
	}
	return ServerStats{}, fmt.Errorf("chronyd %s: serverstats answered with %T", m.addr, resp)
}
