package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// A second signal does not wait: while the first one's stop waits its grace
// for an output whose reader stopped reading, SIGINT exits at once, and every
// point the spool accepted is on disk (the spool wrote and fsynced what it
// held before the exit).
func TestSecondSignalExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	stuck, err := os.OpenFile(fifo, os.O_RDWR, 0) // a reader that never reads
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	cfg := writeConfig(t, dir, fmt.Sprintf(`clock:
  enabled: false
phc:
  enabled: false
loadgen:
  enabled: true
  rate: 20000
  interval: 50ms
spool:
  dir: %s/spool
output:
  stdout: false
  file: %s
`, dir, fifo))
	cmd := command("run", "--config", cfg)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	// And until it runs (points in the spool), however long a loaded or
	// emulated machine takes to start it: a SIGTERM before its handler is
	// in place kills it.
	waitWritten(t, filepath.Join(dir, "spool", "*.seg"))
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(200 * time.Millisecond) // inside the output's 1 s grace
	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	took := time.Since(start)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFail {
		t.Fatalf("exit %v after the second signal, want status %d\n%s", err, exitFail, stderr.String())
	}
	if took > 500*time.Millisecond || !strings.Contains(stderr.String(), "second signal") {
		t.Fatalf("second signal: exit after %v\n%s", took, stderr.String())
	}
	var appended int64 = -1
	for _, l := range strings.Split(stderr.String(), "\n") {
		if i := strings.Index(l, " points appended"); i >= 0 && strings.Contains(l, "spool ") {
			f := strings.Fields(l[:i])
			appended, _ = strconv.ParseInt(f[len(f)-1], 10, 64)
		}
	}
	count, _, maxSeq, _ := spoolLoadgen(t, filepath.Join(dir, "spool"))
	if appended <= 0 || count == 0 || count > appended || count != maxSeq+1 {
		t.Fatalf("spool said %d appended; on disk %d loadgen points of seq 0..%d\n%s", appended, count, maxSeq, stderr.String())
	}
	t.Logf("second signal: exit in %v; the spool said %d points appended, %d loadgen points (seq 0..%d) are on disk", took.Round(time.Millisecond), appended, count, maxSeq)
}
