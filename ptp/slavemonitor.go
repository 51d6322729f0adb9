package ptp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/monagent/monagent/timebase"
)

// ErrSocketInUse is a slave event monitor path another process is bound to.
var ErrSocketInUse = errors.New("socket in use by another process")

// SlaveEventListener is the Unix datagram socket ptp4l's slave event
// monitor sends to (ptp4l's `slave_event_monitor <path>`): monagent binds
// it, ptp4l sends one signaling message per Sync and per Delay_Resp it uses.
type SlaveEventListener struct {
	path  string
	conn  *net.UnixConn
	buf   [1500]byte
	recs  []SlaveTiming
	lastN int // the last datagram's length (tests)

	Datagrams   atomic.Uint64 // datagrams read
	Undecodable atomic.Uint64 // datagrams that were not slave event messages
	UnknownTLVs atomic.Uint64 // TLVs other than the two timing TLVs, skipped
}

// SlaveEventSocketMode is the slave event monitor socket's mode: a
// datagram sent to it becomes records, so no other user may send.
const SlaveEventSocketMode = 0o600

// ListenSlaveEvents binds path, mode SlaveEventSocketMode. A path that exists is taken over only when
// it is a stale socket (nobody bound to it: a connect is refused), as a
// monagent that was killed leaves it; a socket someone is bound to is
// ErrSocketInUse, and a path that is not a socket an error naming it: monagent
// removes nothing else. The directory must exist.
func ListenSlaveEvents(path string) (*SlaveEventListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("slave event monitor %s: exists and is not a socket (%v): remove it or choose another path", path, fi.Mode().Type())
		}
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("slave event monitor %s: %w", path, ErrSocketInUse)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("slave event monitor %s: checking the socket left there: %w", path, opCause(err))
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("slave event monitor %s: removing the stale socket: %w", path, err)
		}
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("slave event monitor %s: %w", path, opCause(err))
	}
	// Only its owner (and root: ptp4l) may send: right after the bind, before
	// ptp4l is pointed at it (the umask is the process's, shared by every
	// goroutine, so it is not changed here).
	if err := os.Chmod(path, SlaveEventSocketMode); err != nil {
		c.Close()
		os.Remove(path)
		return nil, fmt.Errorf("slave event monitor %s: %w", path, err)
	}
	c.SetReadBuffer(256 << 10) // a backlog of ~4000 records while the reader is held up
	return &SlaveEventListener{path: path, conn: c, recs: make([]SlaveTiming, 0, 44)}, nil
}

// Path is the socket's path.
func (l *SlaveEventListener) Path() string { return l.path }

// Run reads until ctx is done (then it returns nil) or the socket fails,
// and calls fn with each datagram's records and the time it was read
// (CLOCK_REALTIME, ns, taken right after the read returned). The records are
// valid during the call only. A datagram that is not a slave event message
// is counted (Undecodable) and skipped.
func (l *SlaveEventListener) Run(ctx context.Context, fn func(recs []SlaveTiming, readNS int64)) error {
	conn := l.conn
	conn.SetReadDeadline(time.Time{})
	defer context.AfterFunc(ctx, func() { conn.SetReadDeadline(time.Unix(1, 0)) })()
	for {
		n, err := conn.Read(l.buf[:])
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("slave event monitor %s: %w", l.path, opCause(err))
		}
		read := timebase.RealtimeNS()
		l.Datagrams.Add(1)
		l.lastN = n
		recs, unknown, err := DecodeSlaveEvents(l.buf[:n], l.recs[:0])
		l.UnknownTLVs.Add(uint64(unknown))
		if err != nil {
			l.Undecodable.Add(1)
			continue
		}
		if len(recs) > 0 {
			fn(recs, read)
		}
		l.recs = recs[:0]
	}
}

// Close closes the socket and removes its path.
func (l *SlaveEventListener) Close() error {
	err := l.conn.Close()
	os.Remove(l.path)
	return err
}
