package marker

import (
	"errors"
	"fmt"
	"sync"

	"github.com/monagent/monagent/timeapi"
)

// ErrFull is returned by Client.Send when the agent's socket queue is full:
// the marker is dropped rather than the application blocked.
var ErrFull = errors.New("agent's marker queue is full")

// Client sends markers to an agent's marker socket. It is safe for
// concurrent use.
type Client struct {
	path string
	mu   sync.Mutex
	fd   int
	buf  []byte
}

// Dial connects to the agent's marker socket at path. Nothing is sent.
func Dial(path string) (*Client, error) {
	fd, err := dial(path)
	if err != nil {
		return nil, fmt.Errorf("marker: dial %s: %w", path, err)
	}
	return &Client{path: path, fd: fd, buf: make([]byte, 0, MaxLen)}, nil
}

// Send sends m as one datagram, without blocking. A marker without a
// sender stamp (ClockNone) is stamped with CLOCK_MONOTONIC now; use
// SendUnstamped to let the agent's arrival stamp be its time. It returns an
// error wrapping ErrFull when the agent's queue is full, an *Error for a
// marker the format refuses, and an error wrapping the system's otherwise
// (e.g. ECONNREFUSED after the agent went away).
func (c *Client) Send(m Marker) error {
	if m.Clock == ClockNone {
		ns, err := monotonicNow()
		if err != nil {
			return fmt.Errorf("marker: CLOCK_MONOTONIC: %w", err)
		}
		m.Clock, m.StampNS = ClockMonotonic, ns
	}
	return c.SendUnstamped(m)
}

// TrueReader is the time API's reader (*timeapi.Reader) as SendTrue needs
// it.
type TrueReader interface {
	Now(clock string) (timeapi.Interval, error)
}

// SendTrue stamps m with the true time of now as the application reads it
// from the agent's time API (r, section clock: "system" or "global"): the
// interval's midpoint and half-width (utc= and utc_bound=, or global= and
// global_bound=), read right beside the CLOCK_MONOTONIC stamp Send adds
// when m has none. The event then reaches the records with its own bound
// (utc_ns and utc_bound_ns, or global_ns and global_bound_ns), taken at the
// source, not at the marker's arrival. A failed read (the section void, the
// agent stopped) sends nothing and returns the read's error: send m with
// Send to have the agent place it.
func (c *Client) SendTrue(m Marker, r TrueReader, clock string) error {
	switch clock {
	case "system":
		m.True = TrueSystem
	case "global":
		m.True = TrueGlobal
	default:
		return fmt.Errorf("marker: true stamp from section %q: want system or global", clock)
	}
	iv, err := r.Now(clock)
	if err != nil {
		return fmt.Errorf("marker: true stamp from section %s: %w", clock, err)
	}
	m.TrueNS, m.TrueBoundNS = iv.MidNS(), iv.HalfWidthNS()
	return c.Send(m)
}

// Mark sends a marker of that name, stamped now with CLOCK_MONOTONIC.
func (c *Client) Mark(name string) error { return c.Send(Marker{Name: name}) }

// SendUnstamped sends m as it is, without blocking.
func (c *Client) SendUnstamped(m Marker) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return fmt.Errorf("marker: send to %s: client closed", c.path)
	}
	b, err := m.AppendText(c.buf[:0])
	if err != nil {
		return err
	}
	c.buf = b[:0]
	if err := send(c.fd, b); err != nil {
		if full(err) {
			return fmt.Errorf("marker: send to %s: %w: %w", c.path, ErrFull, err)
		}
		return fmt.Errorf("marker: send to %s: %w", c.path, err)
	}
	return nil
}

// Close closes the client's socket.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := closeFD(c.fd)
	c.fd = -1
	if err != nil {
		return fmt.Errorf("marker: close %s: %w", c.path, err)
	}
	return nil
}
