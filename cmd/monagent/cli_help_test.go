package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wantFlags checks that out lists every flag of fs with its default.
func wantFlags(t *testing.T, out string, fs *flag.FlagSet) {
	t.Helper()
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		_, usage := flag.UnquoteUsage(f)
		found := false
		for _, l := range strings.Split(out, "\n") {
			l = strings.TrimSpace(l)
			found = found || strings.HasPrefix(l, "--"+f.Name+" ") && strings.Contains(l, usage) && strings.HasSuffix(l, "(default "+def+")")
		}
		if !found {
			t.Errorf("flag --%s with its default %s not listed in:\n%s", f.Name, def, out)
		}
	})
	if n == 0 {
		t.Fatalf("%s has no flags", fs.Name())
	}
}

func TestCLITopLevelHelp(t *testing.T) {
	runFS, _ := runFlags()
	probeFS, _ := probeFlags()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"-help"}} {
		stdout, stderr, code := run(t, ".", args...)
		if code != 0 || stderr != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, stderr)
		}
		wantFlags(t, stdout, runFS)
		wantFlags(t, stdout, probeFS)
		for _, want := range []string{"monagent run --config FILE", "monagent probe", "monagent config check FILE...",
			"monagent spool replay-deadletter|stats|export --config FILE [flags]", "--dry-run ", "monagent version", "exit codes:"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%v: usage lacks %q:\n%s", args, want, stdout)
			}
		}
	}
}

func TestCLICommandHelp(t *testing.T) {
	runFS, _ := runFlags()
	probeFS, _ := probeFlags()
	for _, c := range []struct {
		args     []string
		synopsis string
		fs       *flag.FlagSet
	}{
		{[]string{"run", "--help"}, "monagent run --config FILE", runFS},
		{[]string{"run", "-h"}, "monagent run --config FILE", runFS},
		{[]string{"run", "--config", "x.yaml", "--help"}, "monagent run --config FILE", runFS},
		{[]string{"help", "run"}, "monagent run --config FILE", runFS},
		{[]string{"probe", "--help"}, "monagent probe", probeFS},
		{[]string{"probe", "-h"}, "monagent probe", probeFS},
		{[]string{"version", "--help"}, "monagent version", nil},
		{[]string{"config", "--help"}, "monagent config check FILE...", nil},
		{[]string{"spool", "-h"}, "monagent spool replay-deadletter", nil},
		{[]string{"help", "spool"}, "monagent spool replay-deadletter", nil},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			stdout, stderr, code := run(t, ".", c.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if strings.Count(stdout, c.synopsis) != 1 {
				t.Errorf("want the synopsis %q once:\n%s", c.synopsis, stdout)
			}
			if c.fs != nil {
				wantFlags(t, stdout, c.fs)
			}
		})
	}
}

func TestCLIUsageErrorsAreOneLine(t *testing.T) {
	cfg, _ := filepath.Abs("../../configs/local.yaml")
	for _, c := range []struct {
		args  []string
		names []string // what the one line must name
	}{
		{[]string{"run", "--config", cfg, "extra1", "extra2"}, []string{`"extra1"`, `"extra2"`, "unexpected arguments"}},
		{[]string{"run", "stray", "--config", cfg}, []string{`"stray"`}},
		{[]string{"probe", "--json", "stray"}, []string{`"stray"`}},
		{[]string{"version", "stray"}, []string{`"stray"`}},
		{[]string{"help", "run", "stray"}, []string{`"stray"`}},
		{[]string{"run", "--bogus"}, []string{"-bogus", "monagent run --help"}},
		{[]string{"run", "--duration", "soon", "--config", cfg}, []string{"soon"}},
		{[]string{"run", "--duration", "-5s", "--config", cfg}, []string{"--duration -5s", "positive"}},
		{[]string{"run"}, []string{"--config FILE is required"}},
		{[]string{"frobnicate"}, []string{`unknown command "frobnicate"`}},
		{[]string{"help", "frobnicate"}, []string{`unknown command "frobnicate"`}},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			stdout, stderr, code := run(t, t.TempDir(), c.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2\n%s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || stdout != "" {
				t.Fatalf("want one line on stderr, got stdout %q stderr:\n%s", stdout, stderr)
			}
			for _, n := range c.names {
				if !strings.Contains(lines[0], n) {
					t.Errorf("%q does not name %s", lines[0], n)
				}
			}
		})
	}
	_, stderr, code := run(t, ".")
	if code != 2 || !strings.Contains(stderr, "usage: monagent <command>") {
		t.Fatalf("no command: exit %d\n%s", code, stderr)
	}
}

func TestCLIDispatchesSpoolAndConfig(t *testing.T) {
	for _, cmd := range []string{"spool", "config"} {
		_, stderr, _ := run(t, ".", cmd, "no-such-subcommand")
		if strings.Contains(stderr, "unknown command") {
			t.Errorf("%s is not dispatched: %s", cmd, stderr)
		}
	}
}

func TestCLIRunDoesNotNameAnUnconfiguredInflux(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "output:\n  stdout: false\nspool:\n  dir: spool\n")
	_, stderr, code := run(t, dir, "run", "--config", cfg, "--duration", "300ms", "--log-level", "info")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "monagent running") {
			if strings.Contains(l, "influx") {
				t.Errorf("no influx section, yet the start line names one: %s", l)
			}
			return
		}
	}
	t.Fatal(fmt.Sprintf("no start line in:\n%s", stderr))
}

func TestCLIREADMEShowsTheRealHelp(t *testing.T) {
	stdout, _, code := run(t, ".", "--help")
	readme, err := os.ReadFile("../../README.md")
	if err != nil || code != 0 {
		t.Fatal(code, err)
	}
	if !strings.Contains(string(readme), "$ monagent --help\n"+stdout+"```") {
		t.Errorf("README's Commands section does not show the current 'monagent --help':\n%s", stdout)
	}
}
