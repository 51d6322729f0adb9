package inventory

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestProbeReachesAListeningUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ptp4l")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Skipf("cannot listen on a unix datagram socket here: %v", err)
	}
	defer l.Close()
	sp := probeUnixgram(context.Background(), "ptp4l", path)
	if !sp.Present || !sp.Reachable {
		t.Fatalf("listening socket probed as %+v", sp)
	}
	l.Close()
	os.Remove(path)
	if sp := probeUnixgram(context.Background(), "ptp4l", path); sp.Present || sp.Reachable {
		t.Fatalf("removed socket probed as %+v", sp)
	}
}
