package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheckReportsEveryFile(t *testing.T) {
	shipped, _ := filepath.Glob("../../configs/*.yaml")
	if len(shipped) == 0 {
		t.Fatal("no configs/*.yaml")
	}
	three := "../../agent/testdata/config/three-errors.yaml"
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	var out bytes.Buffer
	err := checkFiles(&out, append(append([]string{}, shipped...), three, missing))
	var ue usageError
	if !errors.As(err, &ue) || strings.Contains(err.Error(), "\n") ||
		!strings.Contains(err.Error(), three+": 3 problems") || !strings.Contains(err.Error(), missing+": unreadable") {
		t.Fatalf("error %v, want one usage line naming both failed files", err)
	}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	var want []string
	for _, f := range shipped {
		for _, l := range got {
			if strings.HasPrefix(l, f+":") && l != f+": ok" && !strings.Contains(l, ": warning: needs the board: ") && !strings.HasPrefix(l, f+": memory: needs at most ") {
				t.Errorf("%s: not ok: %s", f, l)
			}
		}
		want = append(want, f+": ok", f+": memory: needs at most ")
	}
	want = append(want,
		three+`:6: clock.timex: want true or false, got "sometimes"`,
		three+":8: phc.samplez: unknown key",
		three+":13: ntp.servers[0].interval: must be at least 1s",
		missing+": cannot read: no such file or directory",
	)
	for _, w := range want {
		n := 0
		for _, l := range got {
			if strings.HasPrefix(l, w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d lines start with %q, want 1; output:\n%s", n, w, out.String())
		}
	}
	if len(got) != len(want)+strings.Count(out.String(), ": warning: ") {
		t.Errorf("unexpected lines:\n%s", out.String())
	}
}

// The command as a user runs it: several files (a glob), exit 0 only when all
// are ok, 2 for problems or a missing file.
func TestConfigCheckExitCodes(t *testing.T) {
	shipped, _ := filepath.Abs("../../configs")
	files, _ := filepath.Glob(filepath.Join(shipped, "*.yaml"))
	board, _ := filepath.Abs("../../agent/testdata/config/board-only.yaml")
	three, _ := filepath.Abs("../../agent/testdata/config/three-errors.yaml")
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		args  []string
		code  int
		lines int // on standard output
	}{
		{"shipped configs", files, 0, -1},
		{"board config off the board", []string{board}, 0, 8},
		{"three errors", []string{three}, 2, 3},
		{"missing file", []string{filepath.Join(dir, "nope.yaml")}, 2, 1},
		{"missing among good", append([]string{filepath.Join(dir, "nope.yaml")}, files...), 2, -1},
		{"no file", nil, 2, 0},
		{"help", []string{"--help"}, 0, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, dir, append([]string{"config", "check"}, c.args...)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			if n := strings.Count(stdout, "\n"); c.lines >= 0 && n != c.lines {
				t.Errorf("%d lines, want %d:\n%s", n, c.lines, stdout)
			}
			if code == 0 && c.name != "help" {
				for _, f := range c.args {
					if !strings.Contains(stdout, f+": ok\n") {
						t.Errorf("no %q", f+": ok")
					}
				}
			}
			if code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr is more than one line:\n%s", stderr)
			}
		})
	}
}
