package gnss

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/timebase"
)

// DefaultAddress is gpsd's TCP address on the same host.
const DefaultAddress = "127.0.0.1:2947"

// Watch is the command Conn sends: JSON reports, with TOFF and PPS.
const Watch = `?WATCH={"enable":true,"json":true,"pps":true};` + "\n"

// MaxLine is the longest line Conn takes (a SKY of a multi-constellation
// receiver is a few KiB); a longer one is skipped as ErrGarbage.
const MaxLine = 64 << 10

// Conn is one connection to gpsd, read by one goroutine.
type Conn struct {
	c    net.Conn
	addr string
	dec  Decoder
	now  func() (int64, error)

	buf        []byte // buf[start:end] is read but not yet returned
	start, end int
	skipping   bool  // dropping the rest of an overlong line
	stamp      int64 // REALTIME when the read that filled buf[..end] returned

	stop    func() bool
	timeout time.Duration // the most a read may wait; 0: no limit

	lines, garbage, unknown atomic.Uint64
}

// Dial connects to gpsd at address (host:port) and sends Watch. Cancelling
// ctx closes the connection: a Next blocked on it returns. timeout (0: none)
// bounds the connect and each read (SetReadTimeout): a gpsd that keeps
// the connection open but sends nothing is an error of Next, not a wait
// for ever.
func Dial(ctx context.Context, address string, timeout time.Duration) (*Conn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("gpsd %s: %w", address, err)
	}
	g := NewConn(c, address)
	g.SetReadTimeout(timeout)
	g.stop = context.AfterFunc(ctx, func() { c.Close() })
	if err := g.Watch(); err != nil {
		g.Close()
		return nil, err
	}
	return g, nil
}

// NewConn reads gpsd's stream from c (tests hand in one end of a pipe);
// address names it in errors. It sends nothing: Watch does.
func NewConn(c net.Conn, address string) *Conn {
	return &Conn{c: c, addr: address, now: timebase.Realtime.Now, buf: make([]byte, 8<<10)}
}

// SetReadTimeout makes a read that brings nothing for d an error of Next
// (wrapping os.ErrDeadlineExceeded), after which the connection is done;
// 0 waits for ever. gpsd sends each receiver's TPV once a cycle, so a
// timeout of several cycles tells a hung gpsd from a quiet second.
func (g *Conn) SetReadTimeout(d time.Duration) { g.timeout = d }

// Watch sends the WATCH command.
func (g *Conn) Watch() error {
	g.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(g.c, Watch); err != nil {
		return fmt.Errorf("gpsd %s: WATCH: %w", g.addr, err)
	}
	g.c.SetWriteDeadline(time.Time{})
	return nil
}

// Next reads the next line into m and returns when it was read: REALTIME
// (ns) when the read that brought its last byte returned. A line that is
// not a message it decodes is a *LineError (ErrGarbage, ErrUnknownClass;
// counted in Garbage and Unknown) and the connection stays usable; any
// other error is the connection's, and it is done. Empty lines are
// skipped.
func (g *Conn) Next(m *Message) (int64, error) {
	for {
		line, at, err := g.line()
		if err != nil {
			return at, err // an overlong line has its stamp
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		g.lines.Add(1)
		if err := g.dec.Decode(line, m); err != nil {
			if errors.Is(err, ErrUnknownClass) {
				g.unknown.Add(1)
			} else {
				g.garbage.Add(1)
			}
			return at, err
		}
		return at, nil
	}
}

// line returns the next line (without its newline) from the buffer,
// reading more when it holds none; valid until the next call.
func (g *Conn) line() ([]byte, int64, error) {
	for {
		if i := bytes.IndexByte(g.buf[g.start:g.end], '\n'); i >= 0 {
			line := g.buf[g.start : g.start+i]
			g.start += i + 1
			if g.skipping {
				g.skipping = false
				g.lines.Add(1)
				g.garbage.Add(1)
				return nil, g.stamp, &LineError{Err: ErrGarbage, Reason: fmt.Sprintf("line longer than %d bytes", MaxLine)}
			}
			return line, g.stamp, nil
		}
		// No whole line: make room and read.
		if g.start > 0 {
			g.end = copy(g.buf, g.buf[g.start:g.end])
			g.start = 0
		}
		if g.end == len(g.buf) {
			if len(g.buf) < MaxLine {
				g.buf = append(g.buf, make([]byte, len(g.buf))...)
			} else {
				g.skipping, g.end = true, 0 // drop what there is of it
			}
		}
		if g.timeout > 0 {
			g.c.SetReadDeadline(time.Now().Add(g.timeout))
		}
		n, err := g.c.Read(g.buf[g.end:])
		if n > 0 {
			g.stamp, _ = g.now()
			g.end += n
		}
		if err != nil && n == 0 {
			if errors.Is(err, io.EOF) {
				return nil, 0, fmt.Errorf("gpsd %s: connection closed: %w", g.addr, err)
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				return nil, 0, fmt.Errorf("gpsd %s: nothing read for %v: %w", g.addr, g.timeout, err)
			}
			return nil, 0, fmt.Errorf("gpsd %s: read: %w", g.addr, err)
		}
	}
}

// Lines is how many non-empty lines were read; Garbage and Unknown how
// many of them were not decoded (ErrGarbage, ErrUnknownClass).
func (g *Conn) Lines() uint64   { return g.lines.Load() }
func (g *Conn) Garbage() uint64 { return g.garbage.Load() }
func (g *Conn) Unknown() uint64 { return g.unknown.Load() }

// Close closes the connection.
func (g *Conn) Close() error {
	if g.stop != nil {
		g.stop()
	}
	return g.c.Close()
}
