package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// `monagent run --stdout | head -c 10`: the reader of standard output goes
// away after its first bytes. The agent goes on measuring until --duration,
// counts what stdout could not take like a gone FIFO reader, and exits 0 with
// its summary (before: killed by SIGPIPE, exit 141 in a shell, no summary).
// The same with standard error closed as well (`2>&1 | head`): exit 0.
func TestRunSurvivesClosedStdout(t *testing.T) {
	for _, both := range []bool{false, true} {
		name := "stdout"
		if both {
			name = "stdout+stderr"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := writeConfig(t, dir, "clock:\n  interval: 100ms\nphc:\n  enabled: false\nspool:\n  enabled: false\n")
			cmd := command("run", "--config", cfg, "--stdout", "--duration", "3s")
			cmd.Dir = dir
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stdout = w
			var stderr bytes.Buffer
			if both {
				cmd.Stderr = w
			} else {
				cmd.Stderr = &stderr
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			w.Close()
			buf := make([]byte, 10)
			if _, err := io.ReadFull(r, buf); err != nil {
				t.Fatalf("reading the first 10 bytes: %v", err)
			}
			r.Close() // as head does after its bytes
			err = cmd.Wait()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("agent ended with %v after its stdout reader left (stderr: %s)", ee, stderr.String())
			} else if err != nil {
				t.Fatal(err)
			}
			if !both && !strings.Contains(stderr.String(), "not written") {
				t.Errorf("summary does not count what stdout did not take:\n%s", stderr.String())
			}
		})
	}
}

// With log.format json every line on stderr is JSON, the end-of-run summary
// too (before: "monagent: wrote …" text lines after the JSON log).
func TestJSONLogSummaryIsJSON(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "log: {format: json}\nclock: {interval: 100ms}\nphc: {enabled: false}\noutput: {stdout: false, file: out.lp}\nspool: {enabled: false}\n")
	_, stderr, code := run(t, dir, "run", "--config", cfg, "--duration", "1s")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	summaries := 0
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("not JSON: %q", l)
			continue
		}
		if _, ok := rec["summary"]; ok {
			summaries++
		}
	}
	if summaries == 0 {
		t.Errorf("no summary record:\n%s", stderr)
	}
}
