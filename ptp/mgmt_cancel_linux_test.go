package ptp

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A ptp4l socket that is absent: every failed connect removes the socket the
// monitor bound for it, and the error reads the same every time (so the
// agent's repeat suppression logs it once).
func TestMonitorFailedConnectLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	m := NewMonitor(filepath.Join(dir, "ptp4l"), 0, 100*time.Millisecond)
	var first string
	for i := 0; i < 5; i++ {
		_, err := m.CurrentDataSet(t.Context())
		if err == nil {
			t.Fatal("an absent ptp4l answered")
		}
		if i == 0 {
			first = err.Error()
		} else if err.Error() != first {
			t.Fatalf("error %d reads %q, the first %q", i, err, first)
		}
		if left, _ := os.ReadDir(dir); len(left) != 0 {
			t.Fatalf("after failed connect %d: %d files left, e.g. %s", i, len(left), left[0].Name())
		}
	}
	t.Logf("every attempt: %s", first)
}

// A ptp4l that never answers: cancelling the context ends the wait at once,
// whatever the monitor's timeout, and the monitor's socket goes with it.
func TestMonitorHonoursCancellation(t *testing.T) {
	dir := t.TempDir()
	silent, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "ptp4l"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	m := NewMonitor(filepath.Join(dir, "ptp4l"), 0, 30*time.Second)
	defer m.Close()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	_, err = m.CurrentDataSet(ctx)
	took := time.Since(start)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if took > 2*time.Second {
		t.Fatalf("returned %v after the request, cancelled at 200ms (timeout 30s)", took)
	}
	if _, err := m.PortDataSet(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a request after cancellation: %v", err)
	}
	if _, err := os.Stat(m.LocalSocket()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("monitor socket after cancellation: %v", err)
	}
	t.Logf("cancelled wait returned after %v", took)
}
