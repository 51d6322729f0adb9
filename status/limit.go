package status

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// limitListener holds at most max connections open. Beyond it, a new
// connection takes the place of the connection that has waited longest
// without a request in progress: first the idle keep-alive ones (between
// requests), then those whose request has not arrived yet; it is closed,
// as the idle or read timeout would close it, only sooner. When every
// connection has a request in progress, Accept waits for one to end and
// the next connections wait in the kernel's accept queue (a full queue
// drops their SYNs, which clients retry): no goroutine, buffer or request
// is spent on a connection beyond the cap.
//
// The http.Server tells it each connection's state through track (its
// ConnState hook).
type limitListener struct {
	net.Listener
	max  int
	free chan struct{} // a connection ended or went idle (one token; a stale one costs a loop)
	done chan struct{} // closed by Close

	mu    sync.Mutex
	conns map[*limitConn]struct{}
	shut  sync.Once
}

func newLimitListener(ln net.Listener, max int) *limitListener {
	return &limitListener{Listener: ln, max: max, free: make(chan struct{}, 1), done: make(chan struct{}), conns: make(map[*limitConn]struct{})}
}

// limitConn is a connection the listener counts until it is closed.
type limitConn struct {
	net.Conn
	l     *limitListener
	once  sync.Once
	state http.ConnState // under l.mu
	since time.Time      // when it entered state, under l.mu
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
		c.l.signal()
	})
	return err
}

// Accept returns the next connection once it has a place within max.
func (l *limitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			lc := &limitConn{Conn: c, l: l, state: http.StateNew, since: time.Now()}
			l.conns[lc] = struct{}{}
			l.mu.Unlock()
			return lc, nil
		}
		victim := l.waitingLongest()
		l.mu.Unlock()
		if victim != nil {
			victim.Close()
			continue
		}
		select {
		case <-l.free:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
}

// waitingLongest is the idle connection idle longest, else the new
// connection that has waited longest for its request, else nil (every
// connection is serving a request). Called with l.mu held.
func (l *limitListener) waitingLongest() *limitConn {
	var idle, fresh *limitConn
	for c := range l.conns {
		switch c.state {
		case http.StateIdle:
			if idle == nil || c.since.Before(idle.since) {
				idle = c
			}
		case http.StateNew:
			if fresh == nil || c.since.Before(fresh.since) {
				fresh = c
			}
		}
	}
	if idle != nil {
		return idle
	}
	return fresh
}

// track is the http.Server's ConnState hook.
func (l *limitListener) track(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	l.mu.Lock()
	lc.state, lc.since = s, time.Now()
	l.mu.Unlock()
	if s == http.StateIdle {
		l.signal()
	}
}

// signal wakes an Accept waiting for a place.
func (l *limitListener) signal() {
	select {
	case l.free <- struct{}{}:
	default:
	}
}

// Close closes the listener and lets a waiting Accept return.
func (l *limitListener) Close() error {
	l.shut.Do(func() { close(l.done) })
	return l.Listener.Close()
}
