//go:build linux

package marker

import (
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func listen(t *testing.T) (*net.UnixConn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.sock")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func recv(t *testing.T, c *net.UnixConn) Marker {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, MaxLen+1)
	n, err := c.Read(b)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(b[:n])
	if err != nil {
		t.Fatalf("%q: %v", b[:n], err)
	}
	return m
}

func TestClientSendsOneLinePerMarker(t *testing.T) {
	srv, path := listen(t)
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	var before unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &before)
	m := Marker{Name: "phase", HasValue: true, Value: 2.5}
	m.AddTag("rank", "1")
	if err := c.Send(m); err != nil {
		t.Fatal(err)
	}
	var after unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &after)
	got := recv(t, srv)
	if got.Clock != ClockMonotonic || got.StampNS < before.Nano() || got.StampNS > after.Nano() {
		t.Fatalf("stamp %s %d, want monotonic within [%d, %d]", got.Clock, got.StampNS, before.Nano(), after.Nano())
	}
	got.Clock, got.StampNS = ClockNone, 0
	if got != m {
		t.Fatalf("got %+v, want %+v", got, m)
	}

	rt := Marker{Name: "x", Clock: ClockRealtime, StampNS: 7}
	if err := c.Send(rt); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, srv); got != rt {
		t.Fatalf("a stamped marker changed: %+v", got)
	}
	if err := c.SendUnstamped(Marker{Name: "bare"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, srv); got != (Marker{Name: "bare"}) {
		t.Fatalf("%+v", got)
	}
	if err := c.Mark("m"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, srv); got.Name != "m" || got.Clock != ClockMonotonic {
		t.Fatalf("%+v", got)
	}

	var e *Error
	if err := c.Send(Marker{Name: "bad name"}); !errors.As(err, &e) || e.Field != "name" {
		t.Fatalf("bad marker: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
	if err := c.Mark("late"); err == nil {
		t.Fatal("send after Close succeeded")
	}
}

// A full receive queue fails the send at once with ErrFull.
func TestClientSendDoesNotBlock(t *testing.T) {
	_, path := listen(t) // never read
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	go func() {
		for i := 0; i < 100000; i++ {
			if err := c.Mark("flood"); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFull) {
			t.Fatalf("err %v after filling the queue, want ErrFull", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Send blocked on a full queue")
	}
}

func TestDialAndSendFailures(t *testing.T) {
	if _, err := Dial(filepath.Join(t.TempDir(), "none.sock")); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("dial a missing socket: %v", err)
	}
	srv, path := listen(t)
	c, err := Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Close()
	if err := c.Mark("gone"); err == nil || errors.Is(err, ErrFull) {
		t.Fatalf("send to a closed agent: %v", err)
	}
}
