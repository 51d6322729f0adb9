package timeapi

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The C and Python readers against segments this package's Writer made.

const cHeaderDir = "../clients/c"

// liveSegment is a segment whose "system" clock is LOCKED on this machine's
// clocks (3 ms ahead of REALTIME, as the API's centring demands) and whose
// "global" clock has no sample yet.
func liveSegment(t *testing.T) (string, *Writer, *Reader) {
	t.Helper()
	path, w, r := pairAt(t)
	raw, err := r.raw.Now()
	if err != nil {
		t.Fatal(err)
	}
	rt := time.Now().UnixNano()
	w.Publish(0, Model{State: Locked, BaseNS: raw, TrueNS: rt + 3e6, RatePPB: 1500, BoundNS: 1e6,
		GrowthPPB: 20_000, VoidNS: raw + 3600e9, RealtimeNS: rt})
	return path, w, r
}

type clientLine struct {
	rc    int
	e, l  int64
	state string
}

func parseClient(t *testing.T, out string) map[string]clientLine {
	t.Helper()
	lines := map[string]clientLine{}
	for _, ln := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(ln)
		if len(f) < 2 {
			t.Fatalf("client line %q", ln)
		}
		var c clientLine
		c.rc, _ = strconv.Atoi(f[1])
		if len(f) == 5 {
			c.e, _ = strconv.ParseInt(f[2], 10, 64)
			c.l, _ = strconv.ParseInt(f[3], 10, 64)
			c.state = f[4]
		}
		lines[f[0]] = c
	}
	return lines
}

// runClient runs a reader program on the segment between two Go reads and
// checks each of its answers against the Go reader's.
func runClient(t *testing.T, r *Reader, cmd func(stamp int64) *exec.Cmd) {
	t.Helper()
	before, err := r.Now("system")
	if err != nil {
		t.Fatal(err)
	}
	stamp, _ := r.raw.Now()
	stamp -= 1_234_567_891
	out, err := cmd(stamp).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	after, _ := r.Now("system")
	got := parseClient(t, string(out))
	goPast, err := r.Past("system", MonotonicRaw, stamp)
	if err != nil {
		t.Fatal(err)
	}
	if p := got["past"]; p.rc != 0 || p.e != goPast.EarliestNS || p.l != goPast.LatestNS || p.state != "LOCKED" {
		t.Errorf("past of a MONOTONIC_RAW stamp: %+v, Go says %+v", p, goPast)
	}
	// 200 s before: the arithmetic's long path (beyond 2^33 ns of age).
	goFar, err := r.Past("system", MonotonicRaw, stamp-200e9)
	if err != nil {
		t.Fatal(err)
	}
	if p := got["pastfar"]; p.rc != 0 || p.e != goFar.EarliestNS || p.l != goFar.LatestNS {
		t.Errorf("past of a MONOTONIC_RAW stamp 200 s older: %+v, Go says %+v", p, goFar)
	}
	if n := got["now"]; n.rc != 0 || n.e < before.EarliestNS || n.e > after.EarliestNS ||
		n.l < before.LatestNS || n.l > after.LatestNS || n.state != "LOCKED" {
		t.Errorf("now: %+v, not between Go's %+v and %+v", n, before, after)
	}
	if p := got["pastrt"]; p.rc != 0 || p.e > after.LatestNS || p.l < before.EarliestNS {
		t.Errorf("past of a REALTIME stamp taken now: %+v, outside Go's %+v .. %+v", p, before, after)
	}
	for what, want := range map[string]int{"open": 0, "global": -CodeNotInitialised, "nosuch": -CodeUnknownClock, "after": 1, "before": 0} {
		if got[what].rc != want {
			t.Errorf("%s: %d, want %d", what, got[what].rc, want)
		}
	}
	t.Logf("%s", out)
}

// buildC compiles a C program with cc and the header under the flags,
// skipping (with the reason) where the compiler or its C library is absent.
func buildC(t *testing.T, cc, src string, extra ...string) string {
	t.Helper()
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("%s not installed (scripts/test.sh installs it)", cc)
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe.c")
	os.WriteFile(probe, []byte("#include <stdio.h>\nint main(void){return 0;}\n"), 0o644)
	if out, err := exec.Command(cc, append([]string{"-o", filepath.Join(dir, "probe"), probe}, extra...)...).CombinedOutput(); err != nil {
		t.Skipf("%s cannot build a C program here (its C library is missing: %s)", cc, strings.TrimSpace(string(out)))
	}
	exe := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
	args := append([]string{"-std=c99", "-pedantic", "-O2", "-Wall", "-Wextra", "-Werror", "-I", cHeaderDir, "-o", exe, src}, extra...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return exe
}

// The header builds warning-free (-Werror) for amd64 and armhf.
func TestCHeaderBuilds(t *testing.T) {
	for _, cc := range []string{"gcc", "arm-linux-gnueabihf-gcc"} {
		t.Run(cc, func(t *testing.T) {
			buildC(t, cc, "testdata/reader_check.c")
			buildC(t, cc, "testdata/reader_bench.c")
		})
	}
}

func TestCReader(t *testing.T) {
	path, w, r := liveSegment(t)
	t.Run("native", func(t *testing.T) {
		exe := buildC(t, "gcc", "testdata/reader_check.c")
		runClient(t, r, func(stamp int64) *exec.Cmd { return exec.Command(exe, path, strconv.FormatInt(stamp, 10)) })
	})
	t.Run("armhf", func(t *testing.T) {
		if _, err := exec.LookPath("qemu-arm-static"); err != nil {
			t.Skip("qemu-arm-static not installed")
		}
		exe := buildC(t, "arm-linux-gnueabihf-gcc", "testdata/reader_check.c", "-static")
		runClient(t, r, func(stamp int64) *exec.Cmd {
			return exec.Command("qemu-arm-static", exe, path, strconv.FormatInt(stamp, 10))
		})
	})
	t.Run("void", func(t *testing.T) {
		exe := buildC(t, "gcc", "testdata/reader_check.c")
		w.Void(0)
		defer liveRepublish(w, r)
		out, _ := exec.Command(exe, path, "0").CombinedOutput()
		if got := parseClient(t, string(out)); got["now"].rc != -CodeVoid {
			t.Errorf("now on a void section: %+v, want %d", got["now"], -CodeVoid)
		}
	})
}

// The C reader's seqlock in another process, natively and as armhf under
// qemu-arm-static, against the Go writer at 50 kHz: 0 torn reads.
func TestCTornReads(t *testing.T) {
	for _, c := range []struct{ name, cc, via string }{
		{"native", "gcc", ""},
		{"armhf", "arm-linux-gnueabihf-gcc", "qemu-arm-static"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			if c.via != "" {
				if _, err := exec.LookPath(c.via); err != nil {
					t.Skipf("%s not installed", c.via)
				}
				extra = []string{"-static"}
			}
			exe := buildC(t, c.cc, "testdata/reader_torn.c", extra...)
			path, w, _ := pairAt(t)
			w.Publish(1, tornModel(0))
			stop := make(chan struct{})
			done := make(chan int64)
			go func() {
				k := int64(1)
				for next := time.Now(); ; k++ {
					select {
					case <-stop:
						done <- k
						return
					default:
					}
					w.Publish(1, tornModel(k))
					for next = next.Add(tornPeriod); time.Now().Before(next); {
					}
				}
			}()
			args := []string{path, "20000000", "2000"}
			cmd := exec.Command(exe, args...)
			if c.via != "" {
				cmd = exec.Command(c.via, append([]string{exe}, args...)...)
			}
			out, err := cmd.CombinedOutput()
			close(stop)
			published := <-done
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var reads, torn, inconsistent, changed int64
			if _, err := fmt.Sscanf(string(out[strings.LastIndex(strings.TrimSpace(string(out)), "\n")+1:]),
				"reads %d torn %d inconsistent %d changed %d", &reads, &torn, &inconsistent, &changed); err != nil {
				t.Fatalf("output %q: %v", out, err)
			}
			t.Logf("C %s: %d reads against %d publishes: torn %d, inconsistent %d, saw a new model %d",
				c.name, reads, published, torn, inconsistent, changed)
			if torn != 0 || reads == 0 || changed < 2 {
				t.Fatalf("%s", out)
			}
		})
	}
}

// liveRepublish makes "system" valid again after a test voided it.
func liveRepublish(w *Writer, r *Reader) {
	raw, _ := r.raw.Now()
	rt := time.Now().UnixNano()
	w.Publish(0, Model{State: Locked, BaseNS: raw, TrueNS: rt + 3e6, RatePPB: 1500, BoundNS: 1e6,
		GrowthPPB: 20_000, VoidNS: raw + 3600e9, RealtimeNS: rt})
}

func TestPythonReader(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	path, w, r := liveSegment(t)
	runClient(t, r, func(stamp int64) *exec.Cmd {
		return exec.Command(py, "testdata/reader_check.py", "../clients/python", path, strconv.FormatInt(stamp, 10))
	})
	// The cost line: time.clock_gettime_ns(CLOCK_REALTIME) and reader.now in
	// one run (a figure, not an assertion).
	w.Void(0)
	out, _ := exec.Command(py, "testdata/reader_check.py", "../clients/python", path, "0").CombinedOutput()
	got := parseClient(t, string(out))
	if got["now"].rc != -CodeVoid {
		t.Errorf("now on a void section: %+v, want %d\n%s", got["now"], -CodeVoid, out)
	}
	if !strings.Contains(string(out), "clocks system,global") {
		t.Errorf("clocks: %s", out)
	}
}

// docProgram is the one C program of docs/timeapi.md, found as the outside
// check finds it.
func docProgram(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/timeapi.md")
	if err != nil {
		t.Fatal(err)
	}
	var progs []string
	for _, m := range regexp.MustCompile("(?s)```c\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "main(") {
			progs = append(progs, m[1])
		}
	}
	if len(progs) != 1 {
		t.Fatalf("docs/timeapi.md has %d C programs (```c blocks with main), want exactly 1", len(progs))
	}
	return progs[0]
}

// The C program of docs/timeapi.md, compiled exactly as the outside check
// compiles it, prints `earliest_ns latest_ns state` for the system clock from
// $MONAGENT_TIME_PATH, else from the default path.
func TestDocCProgram(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	dir := t.TempDir()
	src, exe := filepath.Join(dir, "prog.c"), filepath.Join(dir, "prog")
	os.WriteFile(src, []byte(docProgram(t)), 0o644)
	build := exec.Command("gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", "clients/c", "-o", exe, src)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	path, w, r := liveSegment(t)
	run := func(env ...string) (Interval, string, error) {
		before, _ := r.Now("system")
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		after, _ := r.Now("system")
		f := strings.Fields(string(out))
		if err != nil || len(f) != 3 || strings.Count(string(out), "\n") != 1 {
			return Interval{}, string(out), err
		}
		e, err1 := strconv.ParseInt(f[0], 10, 64)
		l, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || f[2] != "LOCKED" || e < before.EarliestNS || e > after.EarliestNS ||
			l < before.LatestNS || l > after.LatestNS {
			t.Errorf("printed %q, not Go's %+v .. %+v", out, before, after)
		}
		return Interval{EarliestNS: e, LatestNS: l}, string(out), nil
	}
	if _, out, err := run("MONAGENT_TIME_PATH=" + path); err != nil {
		t.Fatalf("with MONAGENT_TIME_PATH: %v %q", err, out)
	}
	// Unset, the default path: time.shm in $TMPDIR (no $RUNTIME_DIRECTORY).
	env := []string{"MONAGENT_TIME_PATH=", "RUNTIME_DIRECTORY=", "TMPDIR=" + filepath.Dir(path)}
	if _, out, err := run(env...); err != nil {
		t.Fatalf("with the default path: %v %q", err, out)
	}
	w.Void(0)
	if _, out, err := run("MONAGENT_TIME_PATH=" + path); err == nil {
		t.Fatalf("void section: exit 0, printed %q", out)
	}
}

// TestCReaderCost times the C reader beside clock_gettime(CLOCK_REALTIME) in
// one run (figures, not an assertion: the machine is shared), natively and,
// emulated, for armhf.
func TestCReaderCost(t *testing.T) {
	path, _, _ := liveSegment(t)
	for _, c := range []struct{ name, cc, via string }{
		{"native", "gcc", ""},
		{"armhf", "arm-linux-gnueabihf-gcc", "qemu-arm-static"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var extra []string
			args := []string{path, "2000000"}
			if c.via != "" {
				if _, err := exec.LookPath(c.via); err != nil {
					t.Skipf("%s not installed", c.via)
				}
				extra = []string{"-static"}
			}
			exe := buildC(t, c.cc, "testdata/reader_bench.c", extra...)
			cmd := exec.Command(exe, args...)
			if c.via != "" {
				cmd = exec.Command(c.via, append([]string{exe}, args...)...)
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			var cg, now float64
			if _, err := fmtSscanf(string(out), &cg, &now); err != nil || cg <= 0 || now <= 0 {
				t.Fatalf("output %q: %v", out, err)
			}
			t.Logf("C %s%s: clock_gettime(CLOCK_REALTIME) %.1f ns, monagent_time_now %.1f ns (%.2f×)",
				c.name, map[bool]string{true: " (emulated by qemu-arm-static)"}[c.via != ""], cg, now, now/cg)
		})
	}
}

func fmtSscanf(s string, cg, now *float64) (int, error) {
	return fmt.Sscanf(s, "clock_gettime %g now %g", cg, now)
}
