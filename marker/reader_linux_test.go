package marker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestReader: well-formed markers come out with their arrival; a malformed
// datagram and one too long are *Errors (ErrSyntax), counted, the last kept;
// each datagram is counted by how it was stamped; a failed socket is the
// listener's error and closes it, and Listen binds it again.
func TestReader(t *testing.T) {
	r := NewReader(filepath.Join(t.TempDir(), "m.sock"), 0o600)
	if _, _, err := r.Next(t.Context()); err == nil || !strings.Contains(err.Error(), "not bound") || r.Listening() {
		t.Fatalf("a reader not bound: %v", err)
	}
	if err := r.Listen(); err != nil || !r.Listening() {
		t.Fatal(err)
	}
	if err := r.Listen(); err != nil { // bound already: nothing to do
		t.Fatal(err)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: r.Path(), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	long := "m " + strings.Repeat("x", MaxLen+8)
	for _, line := range []string{"start value=1", "-bad", long, "end k=v"} {
		if _, err := c.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := timebase.Realtime.Now()
	for i, want := range []string{"start value=1", "marker: name: ", "marker: line: longer than 512 bytes", "end k=v"} {
		m, arrival, err := r.Next(t.Context())
		now, _ := timebase.Realtime.Now()
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrSyntax) || !strings.HasPrefix(err.Error(), want) || r.LastMalformed() != err.Error() {
				t.Errorf("datagram %d: %v, last %q; want %q", i, err, r.LastMalformed(), want)
			}
		} else if m.String() != want || arrival < before-MaxSkewNS || arrival > now {
			t.Errorf("datagram %d: %q at %d; want %q within [%d, %d]", i, m.String(), arrival, want, before, now)
		}
	}
	if r.Malformed() != 2 || r.KernelStamped()+r.ReadStamped() != 4 {
		t.Errorf("malformed %d, stamped %d + %d; want 2 and 4", r.Malformed(), r.KernelStamped(), r.ReadStamped())
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	if !r.Listening() {
		t.Fatal("a done context closed the socket")
	}
	r.l.sock.conn.Close() // the socket fails under the reader
	if _, _, err := r.Next(t.Context()); err == nil || errors.Is(err, ErrSyntax) || r.Malformed() != 2 || r.Listening() {
		t.Errorf("a failed socket: %v, listening %v", err, r.Listening())
	}
	if err := r.Close(); err != nil {
		t.Error(err)
	}
	if _, err := os.Lstat(r.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket file after a failure and Close: %v", err)
	}
	if err := r.Listen(); err != nil || !r.Listening() {
		t.Fatalf("bound again: %v", err)
	}
	r.Close()
}
