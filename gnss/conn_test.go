package gnss

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/gnss/gnsstest"
)

// fakeGpsd accepts one connection on loopback, checks the WATCH command and
// then writes the chunks, each in its own write, a little apart.
func fakeGpsd(t *testing.T, chunks ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, len(Watch))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != Watch {
			t.Errorf("gpsd got %q, %v; want the WATCH command", buf, err)
			return
		}
		for _, ch := range chunks {
			if _, err := io.WriteString(c, ch); err != nil {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return l.Addr().String()
}

// Lines split across reads, an overlong line, garbage and an unknown class
// each come back in order; the bad ones as *LineError and counted, and the
// stream goes on after them. Each line is stamped when the read that
// completed it returned.
func TestGnssConnReadsLinesAcrossReads(t *testing.T) {
	long := `{"class":"TPV","x":"` + strings.Repeat("a", MaxLine) + `"}` + "\r\n"
	addr := fakeGpsd(t,
		`{"class":"VERSION","release":"3.22"}`+"\r\n"+`{"class":"TPV","device":"/dev/x","mo`,
		`de":3}`+"\r\n\r\n",
		"garbage\r\n",
		long,
		`{"class":"GST","device":"/dev/x"}`+"\r\n",
		`{"class":"PPS","device":"/dev/x","real_sec":2,"real_nsec":0,"clock_sec":1,"clock_nsec":999999990}`+"\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before := time.Now().UnixNano()
	c, err := Dial(ctx, addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	type got struct {
		class Class
		err   error
	}
	var gots []got
	var last int64
	for range 6 {
		var m Message
		at, err := c.Next(&m)
		if err != nil && !errors.As(err, new(*LineError)) {
			t.Fatal(err)
		}
		if at < before || at < last || at > time.Now().UnixNano() {
			t.Errorf("%s stamped %d, not within the read", m.Class, at)
		}
		last = at
		gots = append(gots, got{m.Class, err})
	}
	want := []struct {
		class Class
		err   error
	}{{ClassVersion, nil}, {ClassTPV, nil}, {ClassUnknown, ErrGarbage}, {ClassUnknown, ErrGarbage}, {ClassUnknown, ErrUnknownClass}, {ClassPPS, nil}}
	for i, w := range want {
		if gots[i].class != w.class || !errors.Is(gots[i].err, w.err) || (w.err == nil) != (gots[i].err == nil) {
			t.Errorf("line %d: %v %v, want %v %v", i, gots[i].class, gots[i].err, w.class, w.err)
		}
	}
	if c.Lines() != 6 || c.Garbage() != 2 || c.Unknown() != 1 {
		t.Errorf("lines %d, garbage %d, unknown %d; want 6, 2, 1", c.Lines(), c.Garbage(), c.Unknown())
	}
	var m Message
	if _, err := c.Next(&m); err == nil || !strings.Contains(err.Error(), "gpsd "+addr+": connection closed") {
		t.Errorf("after gpsd closed: %v", err)
	}
}

// Cancelling the context ends a Next blocked on a silent gpsd.
func TestGnssConnStopsWithItsContext(t *testing.T) {
	addr := fakeGpsd(t, `{"class":"VERSION"}`+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Dial(ctx, addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var m Message
	if _, err := c.Next(&m); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { _, err := c.Next(&m); done <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Next returned no error after cancel")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5 s after cancel")
	}
}

// Dialing where nothing listens names the address.
func TestGnssDialNamesTheAddress(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	_, err := Dial(context.Background(), addr, 0)
	if err == nil || !strings.HasPrefix(err.Error(), "gpsd "+addr+": ") {
		t.Fatalf("%v", err)
	}
}

// A gpsd that keeps the connection open and sends nothing more is an error
// of Next once the read timeout passes (os.ErrDeadlineExceeded, naming the
// address and the timeout), not a wait for ever; lines that keep coming,
// each within the timeout though all together far longer, are no timeout.
func TestGnssConnTimesOutAHungGpsd(t *testing.T) {
	const timeout = 300 * time.Millisecond
	lines := []string{`{"class":"VERSION","release":"3.22"}`}
	for range 12 { // 12 × 100 ms: four timeouts in all
		lines = append(lines, `{"class":"TPV","device":"/dev/x","mode":3}`)
	}
	addr := gnsstest.Hung(t, timeout/3, lines...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, addr, timeout)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var m Message
	for i := range lines {
		if _, err := c.Next(&m); err != nil {
			t.Fatalf("line %d of a gpsd that sends one every %v: %v", i, timeout/3, err)
		}
	}
	start := time.Now()
	_, err = c.Next(&m)
	if !errors.Is(err, os.ErrDeadlineExceeded) || !strings.Contains(err.Error(), "gpsd "+addr+": nothing read for 300ms") {
		t.Fatalf("a silent gpsd: %v after %v; want a read timeout naming it", err, time.Since(start))
	}
	if time.Since(start) < timeout {
		t.Errorf("timed out after %v, before the %v timeout", time.Since(start), timeout)
	}
}
