// Package gnsstest has fakes of gpsd for tests of its clients (package
// gnss, the agent's gnss source). Real gpsd runs under gpsfake in
// internal/testbed.
package gnsstest

import (
	"io"
	"net"
	"testing"
	"time"
)

// Hung is a gpsd on loopback that writes the lines to each connection it
// accepts, one every gap, and then keeps the connection open without a byte
// more until the test ends: a hung gpsd. It returns its address.
func Hung(t testing.TB, gap time.Duration, lines ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	Serve(t, l, func(c net.Conn, done <-chan struct{}) {
		for _, line := range lines {
			if _, err := io.WriteString(c, line+"\n"); err != nil {
				return
			}
			time.Sleep(gap)
		}
		<-done
	})
	return l.Addr().String()
}

// Serve is a gpsd on l: serve talks to each connection it accepts, on a
// goroutine of its own, until done is closed when the test ends (then l
// and the connection are closed).
func Serve(t testing.TB, l net.Listener, serve func(c net.Conn, done <-chan struct{})) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done); l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c, done)
			}()
		}
	}()
}
