package status

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limited serves an empty registry under lim, with /block answering once
// release gets a value (or is closed); each /block says on entered that its
// handler runs.
func limited(t *testing.T, lim Limits) (s *Server, release, entered chan struct{}) {
	t.Helper()
	release, entered = make(chan struct{}), make(chan struct{}, 1024)
	s = listenAndServe(t, prometheus.NewRegistry(), func() Doc { return Doc{Host: "boarda"} }, lim)
	s.mux.HandleFunc("GET /block", func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	return s, release, entered
}

// wait takes n values from ch within 10 s.
func wait(t *testing.T, ch chan struct{}, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for i := range n {
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("%d of %d requests in their handler 10 s on", i, n)
		}
	}
}

// request opens a connection and sends one GET of path on it, the
// connection kept open.
func request(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	return c
}

// answer reads one answer on c within d, its status code or the error.
func answer(c net.Conn, br *bufio.Reader, d time.Duration) (int, error) {
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// With every place taken by a request in progress, the next connection is
// not served until one of them ends; then it is.
func TestLimitHoldsTheConnectionBeyondTheCap(t *testing.T) {
	s, release, entered := limited(t, Limits{MaxConns: 2})
	a := request(t, s.Addr(), "/block")
	b := request(t, s.Addr(), "/block")
	wait(t, entered, 2)
	c := request(t, s.Addr(), "/status")
	br := bufio.NewReader(c)
	if code, err := answer(c, br, 500*time.Millisecond); !isTimeout(err) {
		t.Fatalf("the third connection was answered (%d, %v) while two requests held both places", code, err)
	}
	release <- struct{}{} // one /block ends: its connection, idle, gives its place
	if code, err := answer(c, br, 10*time.Second); err != nil || code != 200 {
		t.Fatalf("the third connection, a place freed: %d, %v", code, err)
	}
	close(release)
	for _, x := range []net.Conn{a, b} {
		if code, err := answer(x, bufio.NewReader(x), 10*time.Second); err != nil || code != 200 {
			t.Errorf("a held request: %d, %v", code, err)
		}
	}
}

// isTimeout tells a read deadline's error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Beyond the cap a new connection replaces the connection idle longest,
// which is closed: the new one is answered at once.
func TestLimitReplacesTheIdleLongest(t *testing.T) {
	s, _, _ := limited(t, Limits{MaxConns: 2})
	var conns []net.Conn
	var readers []*bufio.Reader
	for i := range 3 {
		c := request(t, s.Addr(), "/status")
		br := bufio.NewReader(c)
		if code, err := answer(c, br, 10*time.Second); err != nil || code != 200 {
			t.Fatalf("connection %d: %d, %v", i, code, err)
		}
		conns, readers = append(conns, c), append(readers, br)
		time.Sleep(20 * time.Millisecond) // each idle after the one before
	}
	// The first, idle longest, was closed for the third.
	conns[0].SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := readers[0].ReadByte(); err != io.EOF {
		t.Errorf("the connection idle longest: %v, want it closed (EOF)", err)
	}
	// The second is still served.
	io.WriteString(conns[1], "GET /status HTTP/1.1\r\nHost: x\r\n\r\n")
	if code, err := answer(conns[1], readers[1], 10*time.Second); err != nil || code != 200 {
		t.Errorf("the second connection's next request: %d, %v", code, err)
	}
}

// A keep-alive connection without a request is closed after IdleTimeout.
func TestLimitClosesIdleConnections(t *testing.T) {
	s, _, _ := limited(t, Limits{IdleTimeout: 300 * time.Millisecond})
	c := request(t, s.Addr(), "/status")
	br := bufio.NewReader(c)
	if code, err := answer(c, br, 10*time.Second); err != nil || code != 200 {
		t.Fatalf("%d, %v", code, err)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("an idle connection 10 s on: %v, want closed by the 300 ms idle timeout", err)
	}
	t.Logf("closed %v after its answer", time.Since(start).Round(time.Millisecond))
}

// A request whose headers pass MaxHeaderBytes is answered 431, one within
// it 200; a request that does not arrive within ReadTimeout has its
// connection closed.
func TestLimitRefusesOversizedAndSlowRequests(t *testing.T) {
	s, _, _ := limited(t, Limits{MaxHeaderBytes: 4 << 10, ReadTimeout: 300 * time.Millisecond})
	for _, tc := range []struct {
		pad  int
		want int
	}{{1000, 200}, {100_000, 431}, {1 << 20, 431}} {
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		// Written beside the read: the server may close before taking it all.
		go func() {
			io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: "+strings.Repeat("a", tc.pad)+"\r\n\r\n")
		}()
		code, err := answer(c, bufio.NewReader(c), 10*time.Second)
		c.Close()
		if code != tc.want {
			t.Errorf("%d bytes of headers: %d (%v), want %d", tc.pad, code, err, tc.want)
		}
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // and never the rest
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, err := io.ReadAll(c); err != nil {
		t.Errorf("a request that never ends, 10 s on: %v (%q), want its connection closed by the 300 ms read timeout", err, b)
	}
}

// Connections beyond the cap cost no goroutine: 200 connections, each
// having sent a request, leave at most MaxConns serving goroutines.
func TestLimitSpendsNoGoroutineBeyondTheCap(t *testing.T) {
	const max, n = 4, 200
	s, release, entered := limited(t, Limits{MaxConns: max})
	base := runtime.NumGoroutine()
	for range n {
		request(t, s.Addr(), "/block")
	}
	wait(t, entered, max)
	time.Sleep(300 * time.Millisecond) // time to accept more, were there no cap
	g := runtime.NumGoroutine()
	t.Logf("%d goroutines before, %d with %d connections held beyond a cap of %d", base, g, n, max)
	if g > base+2*max+5 { // a serving goroutine and its background read each
		t.Errorf("%d goroutines with %d connections against a cap of %d (%d before)", g, n, max, base)
	}
	close(release)
}
