package ntp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"path/filepath"
	"testing"
	"time"

	"github.com/monagent/monagent/sockts"
)

// cancelledWithin runs call under a context cancelled after 200 ms and fails
// unless it returns context.Canceled within 2 s, although the peer never
// answers and the timeout is 30 s: a stopping agent must not wait for it.
func cancelledWithin(t *testing.T, what string, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	err := call(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%s: err %v, want context.Canceled", what, err)
	}
	if took > 2*time.Second {
		t.Fatalf("%s: returned %v after the call, cancelled at 200ms (timeout 30s)", what, took)
	}
	t.Logf("%s: cancelled wait returned after %v", what, took)
}

func TestProbeHonoursCancellation(t *testing.T) {
	conn, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	addr := silent.LocalAddr().(*net.UDPAddr).AddrPort()
	p := NewProber(ProbeConfig{Server: addr, Burst: 4, BurstSpacing: time.Second, Timeout: 30 * time.Second}, conn)
	cancelledWithin(t, "probe of a silent server", func(ctx context.Context) error {
		_, err := p.Poll(ctx)
		return err
	})
}

func TestChronyHonoursCancellation(t *testing.T) {
	dir := t.TempDir()
	silent, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "chronyd.sock"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	m := NewChrony(filepath.Join(dir, "chronyd.sock"), dir, 30*time.Second)
	defer m.Close()
	cancelledWithin(t, "chronyd over its command socket", func(ctx context.Context) error {
		_, err := m.Tracking(ctx)
		return err
	})
	u, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	mu := NewChrony(u.LocalAddr().String(), "", 30*time.Second)
	defer mu.Close()
	cancelledWithin(t, "chronyd over UDP", func(ctx context.Context) error {
		_, err := mu.Sources(ctx)
		return err
	})
}

// A chronyd socket that is absent: the client socket bound for each attempt
// is removed, and the error reads the same every time.
func TestChronyFailedConnectLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	m := NewChrony(filepath.Join(t.TempDir(), "chronyd.sock"), dir, 100*time.Millisecond)
	var first string
	for i := 0; i < 5; i++ {
		_, err := m.Tracking(t.Context())
		if err == nil {
			t.Fatal("an absent chronyd answered")
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("error %d reads %q, the first %q", i, err, first)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
			t.Fatalf("after failed connect %d: %v left", i, left)
		}
	}
	t.Logf("every attempt: %s", first)
}
