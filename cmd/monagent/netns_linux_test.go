package main

import (
	"bytes"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// runInUntil runs monagent inside h's network namespace for at least least
// and until done, given its standard output so far, says it has what the
// test checks (polled, for up to 90 s), then stops it with SIGTERM, and
// returns its standard output and error. A fixed run that ended before
// enough samples came failed the tests on a loaded or emulated machine.
func runInUntil(t *testing.T, h *testbed.Host, dir, cfg string, least time.Duration, done func(stdout string) bool) (string, string) {
	t.Helper()
	const limit = 90 * time.Second
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", limit.String())
	cmd := h.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var out, errb lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	start := time.Now()
	var err error
	for running := true; running; {
		select {
		case err = <-exited: // the limit: the checks say what is missing
			running = false
		case <-time.After(200 * time.Millisecond):
			if time.Since(start) >= least && done(out.String()) {
				cmd.Process.Signal(syscall.SIGTERM)
				err, running = <-exited, false
			}
		}
	}
	if err != nil {
		t.Fatalf("monagent: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

// lockedBuffer is a bytes.Buffer a process writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
