package faultlog

import (
	"bytes"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A failure repeated every second for an hour is logged when it starts,
// summarised every ten minutes and logged when it ends: 8 lines, not 3,600.
// A failure whose message carries a changing count is one failure.
func TestLogsChangesNotAttempts(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var c Log
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for i := range 3600 {
		c.Note(log, t0.Add(time.Duration(i)*time.Second), errors.New("write 127.0.0.1:8086: batch of "+strconv.Itoa(i)+" points refused"), "output")
	}
	c.Note(log, t0.Add(time.Hour), nil, "output")
	lines := strings.Count(buf.String(), "\n")
	if lines != 1+5+1 {
		t.Fatalf("%d lines for an hour of one failure:\n%s", lines, buf.String())
	}
	if !strings.Contains(buf.String(), "failures=3600") {
		t.Fatalf("the end does not count the failures:\n%s", buf.String())
	}
	buf.Reset()
	c.Note(log, t0, errors.New("disk full"), "output")
	c.Note(log, t0.Add(time.Second), errors.New("permission denied"), "output")
	if n := strings.Count(buf.String(), "\n"); n != 2 {
		t.Fatalf("a change of failure is logged: %d lines\n%s", n, buf.String())
	}
}

// The lines that end or change a failure quote the real last error, not its
// kind with the numbers masked ("ntp 10.0.0.1:123: no reply within 2s", not
// "ntp #.#.#.#:#: no reply within #s").
func TestEndAndChangeQuoteTheRealError(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	var c Log
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	c.Note(log, t0, errors.New("ntp 10.0.0.1:123: no reply within 2s"), "collection")
	c.Note(log, t0.Add(time.Second), errors.New("ntp 10.0.0.1:123: no reply within 3s"), "collection")
	c.Note(log, t0.Add(2*time.Second), errors.New("ntp 10.0.0.1:123: connection refused"), "collection")
	c.Note(log, t0.Add(3*time.Second), nil, "collection")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	if !strings.Contains(lines[1], `was="ntp 10.0.0.1:123: no reply within 3s"`) {
		t.Errorf("the change does not quote the error it replaces: %s", lines[1])
	}
	if !strings.Contains(lines[2], `last="ntp 10.0.0.1:123: connection refused"`) {
		t.Errorf("the end does not quote the last error: %s", lines[2])
	}
	if strings.Contains(buf.String(), "#") {
		t.Errorf("a masked kind reached the log:\n%s", buf.String())
	}
}
