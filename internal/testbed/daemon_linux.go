package testbed

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// daemon is a peer process a test starts, waits for and stops: its stdout and
// stderr are appended to a log file and it dies with the test binary, even one
// killed by go test's timeout.
type daemon struct {
	name   string // the program, for failures ("chronyd exited at start")
	log    string // the log file
	cmd    *exec.Cmd
	exited chan struct{}
}

// start starts cmd and polls ready every poll until it says yes. The test
// fails with the log when the process exits first, and with notReady when
// ready is not true within timeout.
func (d *daemon) start(t testing.TB, cmd *exec.Cmd, ready func() bool, timeout, poll time.Duration, notReady string) {
	t.Helper()
	logf, err := os.OpenFile(d.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	exited := make(chan struct{})
	d.cmd, d.exited = cmd, exited
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	deadline := time.Now().Add(timeout)
	for !ready() {
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", d.name, d.output())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal(notReady)
		}
		time.Sleep(poll)
	}
}

// running reports whether the daemon was started and not stopped since.
func (d *daemon) running() bool { return d.cmd != nil }

// stop sends SIGTERM and, when the process has not exited after grace,
// SIGKILL; it returns once the process is gone.
func (d *daemon) stop(grace time.Duration) {
	if d.cmd == nil || d.cmd.Process == nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(grace):
		d.cmd.Process.Kill()
		<-d.exited
	}
	d.cmd = nil
}

// exists reports whether path exists: a daemon's socket is ready.
func exists(path string) func() bool {
	return func() bool {
		_, err := os.Stat(path)
		return err == nil
	}
}

// output is what the daemon wrote to its log so far.
func (d *daemon) output() string { return fileText(d.log) }

// fileText is the text of the file at path, empty when it cannot be read.
func fileText(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// needPrograms skips the test when one of programs is not on PATH, naming
// where to get them (debian: "Debian package chrony").
func needPrograms(t testing.TB, debian string, programs ...string) {
	t.Helper()
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (%s)", p, debian)
		}
	}
}

// writeFile writes a daemon's configuration (or input) to path; the test
// fails when it cannot.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
