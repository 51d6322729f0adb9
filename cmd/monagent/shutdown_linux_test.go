package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SIGTERM ends run within 2 s although an NTP server and chronyd never answer
// (timeouts 20 s) and ptp4l's socket is absent; signals sent one after the
// other are each answered (before: 75 s with a 20 s timeout, 97 s with TERM,
// TERM, INT, and signal.NotifyContext swallowed the later ones). No socket
// file is left beside the absent ptp4l's or in the runtime directory.
func TestSIGTERMWithSilentPeers(t *testing.T) {
	dir := t.TempDir()
	ntpSilent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ntpSilent.Close()
	run := filepath.Join(dir, "run")
	os.MkdirAll(run, 0o755)
	chronySock := filepath.Join(dir, "chronyd.sock")
	chronySilent, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: chronySock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer chronySilent.Close()
	ptpDir := filepath.Join(dir, "ptp4l")
	os.MkdirAll(ptpDir, 0o755)
	cfg := writeConfig(t, dir, fmt.Sprintf(`paths:
  run: %s
clock:
  enabled: false
phc:
  enabled: false
output:
  stdout: false
  file: %s/out.lp
spool:
  enabled: false
ntp:
  enabled: true
  timeout: 20s
  servers:
    - address: %s
      interval: 1s
  chrony:
    enabled: true
    address: %s
    interval: 1s
ptp:
  enabled: true
  ptp4l:
    enabled: true
    socket: %s/ptp4l
    interval: 1s
`, run, dir, ntpSilent.LocalAddr(), chronySock, ptpDir))
	signals := [][]syscall.Signal{{syscall.SIGTERM}, {syscall.SIGINT}, {syscall.SIGTERM, syscall.SIGTERM, syscall.SIGINT}}
	var worst time.Duration
	for i := range 6 {
		cmd := command("run", "--config", cfg)
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500*time.Millisecond + time.Duration(i)*300*time.Millisecond)
		start := time.Now()
		for _, s := range signals[i%len(signals)] {
			cmd.Process.Signal(s)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("run %d: still running 15 s after %v", i, signals[i%len(signals)])
		}
		took := time.Since(start)
		worst = max(worst, took)
		if took > 2*time.Second {
			t.Fatalf("run %d: exit %v after %v (want <= 2 s)", i, signals[i%len(signals)], took)
		}
	}
	for _, d := range []string{ptpDir, run} {
		if left, _ := os.ReadDir(d); len(left) != 0 {
			t.Fatalf("%d files left in %s, e.g. %s", len(left), d, left[0].Name())
		}
	}
	t.Logf("6 runs, signals after 1.5-3 s: the slowest exit took %v", worst)
}
