package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

var (
	bin string
	// prefix runs the binary: empty natively, qemu-ARCH-static when the tests
	// themselves run under qemu user emulation without binfmt_misc.
	prefix []string
)

// TestMain builds the real binary once; the tests run it as a user would.
// In the QEMU rig's guests, which have no Go toolchain, the binary is
// built on the host and shipped: $MONAGENT_GUEST_BIN names it.
func TestMain(m *testing.M) {
	if b := os.Getenv("MONAGENT_GUEST_BIN"); b != "" {
		bin = b
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "monagent-cmd")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(dir, "monagent")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(build.Environ(), "CGO_ENABLED=0", "GOARCH="+runtime.GOARCH)
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	if err := exec.Command(bin, "version").Run(); errors.Is(err, syscall.ENOEXEC) {
		q, lerr := exec.LookPath("qemu-" + runtime.GOARCH + "-static")
		if lerr != nil {
			panic(fmt.Sprintf("cannot run the %s binary here: %v", runtime.GOARCH, err))
		}
		prefix = []string{q}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := command(args...)
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func command(args ...string) *exec.Cmd {
	if len(args) > 0 && args[0] == "run" && !slices.Contains(args, "--http") {
		// Agents of tests running side by side must not share the default
		// port: each takes a free one.
		args = append(slices.Clone(args), "--http", "127.0.0.1:0")
	}
	argv := append(append(append([]string{}, prefix...), bin), args...)
	return exec.Command(argv[0], argv[1:]...)
}

func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunLocalConfigWritesRecords(t *testing.T) {
	dir := t.TempDir()
	local, _ := filepath.Abs("../../configs/local.yaml")
	stdout, stderr, code := run(t, dir, "run", "--config", local, "--duration", "2500ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"clock_offset,clock=realtime,", "timex,host=", "monagent_source,"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "data", "spool", "*.seg"))
	if len(segs) == 0 {
		t.Fatal("no spool segment under ./data/spool")
	}
	lines := strings.Count(stdout, "\n")
	if !strings.Contains(stderr, fmt.Sprintf("spool ./data/spool: %d points appended", lines)) {
		t.Errorf("run does not say where it wrote the %d records: %s", lines, stderr)
	}
}

func TestSIGTERMStopsCleanly(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "output:\n  stdout: false\n  file: out.lp\nspool:\n  enabled: false\n")
	cmd := command("run", "--config", cfg)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	// And until it runs (a line in out.lp), however long a loaded or
	// emulated machine takes to start it: a SIGTERM before its handler is
	// in place kills it, which is not what is tested here.
	waitWritten(t, filepath.Join(dir, "out.lp"))
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v to stop", d)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "out.lp"))
	if !strings.Contains(string(b), "monagent,host=") {
		t.Fatal("final self-metrics not written on SIGTERM")
	}
}

// waitWritten waits up to 30 s for a file matching pattern to hold data.
func waitWritten(t *testing.T, pattern string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing written to %s within 30 s", pattern)
		}
	}
}

func TestConfigErrorsExitTwoWithOneLine(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"unknown key":       "clock:\n  bogus: 1\n",
		"wrong type":        "phc:\n  samples: lots\n",
		"negative interval": "clock:\n  interval: -5s\n",
		"missing device":    "phc:\n  devices: [/dev/ptp-missing]\n",
		// refused when the source is built, after the preflight: the line is
		// named all the same (it was "source ntp: config: ntp.interface: ...")
		"interface without a PHC": "clock:\n  enabled: false\nphc:\n  enabled: false\nntp:\n  enabled: true\n  timestamping: hardware\n  interface: lo\n  servers:\n    - address: 127.0.0.1\n",
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := writeConfig(t, dir, body)
			checks := [][]string{{"config", "check", cfg}, {"run", "--config", cfg, "--duration", "1s"}}
			if warned := map[string]string{"missing device": "phc.devices[0]", "interface without a PHC": "ntp.interface"}[name]; warned != "" { // off the board, config check only warns
				stdout, stderr, code := run(t, dir, checks[0]...)
				if code != 0 || !strings.Contains(stdout, warned+": warning: needs the board") {
					t.Fatalf("config check of a missing device: exit %d, want 0 and a warning\n%s%s", code, stdout, stderr)
				}
				checks = checks[1:]
			}
			for _, args := range checks {
				_, stderr, code := run(t, dir, args...)
				if code != 2 {
					t.Fatalf("%v: exit %d, want 2\n%s", args, code, stderr)
				}
				lines := strings.Split(strings.TrimSpace(stderr), "\n")
				if len(lines) != 1 || !strings.Contains(lines[0], cfg+":") {
					t.Fatalf("%v: want one line naming %s, got:\n%s", args, cfg, stderr)
				}
			}
		})
	}
	local, _ := filepath.Abs("../../configs/local.yaml")
	stdout, _, code := run(t, dir, "config", "check", local)
	if code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("local.yaml: exit %d %s", code, stdout)
	}
}

func TestProbeJSONAndVersion(t *testing.T) {
	stdout, stderr, code := run(t, ".", "probe", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var inv map[string]any
	if err := json.Unmarshal([]byte(stdout), &inv); err != nil {
		t.Fatalf("probe --json is not JSON: %v", err)
	}
	for _, k := range []string{"clocks", "phcs", "interfaces", "gpio_chips", "daemons"} {
		if _, ok := inv[k]; !ok {
			t.Errorf("probe JSON lacks %q", k)
		}
	}
	text, _, code := run(t, ".", "probe")
	if code != 0 || !strings.Contains(text, "PTP hardware clocks:") {
		t.Fatalf("probe text: %d %s", code, text)
	}
	v, _, code := run(t, ".", "version")
	if code != 0 || !strings.HasPrefix(v, "monagent ") || !strings.Contains(v, runtime.Version()) || !strings.Contains(v, "commit") {
		t.Fatalf("version: %d %q, want the commit and %s", code, v, runtime.Version())
	}
	if _, _, code := run(t, ".", "frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
}
