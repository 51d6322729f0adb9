package marker

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestReader: well-formed markers come out with their arrival; a malformed
// datagram and one too long are *Errors (ErrSyntax), counted, the last kept;
// each datagram is counted by how it was stamped; a closed socket is the
// listener's error.
func TestReader(t *testing.T) {
	l, err := Listen(filepath.Join(t.TempDir(), "m.sock"), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: l.Path(), Net: "unixgram"})
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
	var r Reader
	before, _ := timebase.Realtime.Now()
	for i, want := range []string{"start value=1", "marker: name: ", "marker: line: longer than 512 bytes", "end k=v"} {
		m, arrival, err := r.Next(t.Context(), l)
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
	if _, _, err := r.Next(ctx, l); !errors.Is(err, context.Canceled) {
		t.Errorf("a done context: %v", err)
	}
	l.Close()
	if _, _, err := r.Next(t.Context(), l); err == nil || errors.Is(err, ErrSyntax) || r.Malformed() != 2 {
		t.Errorf("a closed socket: %v", err)
	}
}
