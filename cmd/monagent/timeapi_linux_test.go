package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
)

// timeAPIK is what the three chronyd serve over host time: the system
// clock is K behind their agreeing vote, so the true time is REALTIME + K
// and an interval centred on REALTIME (ClockBound's) would not be
// centred on it.
const timeAPIK = 2 * time.Millisecond

// timeAPIMaxAge is timeapi.max_age's default: how long after the agent's
// last update a section turns void.
const timeAPIMaxAge = 10 * time.Second

// TestTimeAPISystemTruth: the agent's NTP probe judges three chronyd -x
// serving host time + K (the testbed's SOCK refclock); the time API's
// system section, read 10,000 times from another process, holds host
// time + K every time (within chronyd's own residual) and never plain
// REALTIME; `monagent time --json` says LOCKED. Then failure: SIGSTOP →
// the bound grows, then void; SIGCONT → back, same mapping; a clean stop
// → void at once; a restart → back without reopening; SIGKILL → readable
// until timeapi.max_age, then void.
func TestTimeAPISystemTruth(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("RUNTIME_DIRECTORY", dir) // the agent's timeapi.path, time.shm, is under it
	x := newXcheckBed(t, 10*time.Minute, timeAPIK, timeAPIK, timeAPIK)
	path := filepath.Join(dir, "time.shm")
	doc := waitTimeLocked(t, x, path, 40*time.Second)
	if doc["clock"] != "system" || doc["earliest_ns"] == nil || doc["latest_ns"] == nil {
		t.Fatalf("monagent time --json: %v", doc)
	}
	r, err := timeapi.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	slack := int64(x.residual) + 1 // how far chronyd's served time strays from host + K
	k := timeAPIK.Nanoseconds()
	var halves, errs []int64 // half-widths; |midpoint − truth|, the truth taken mid-read
	const reads = 10_000
	for i := range reads {
		before := time.Now().UnixNano()
		iv, err := r.Now("system")
		after := time.Now().UnixNano()
		if err != nil {
			t.Fatalf("read %d: %v", i, err)
		}
		if iv.State != timeapi.Locked {
			t.Fatalf("read %d: %v, want LOCKED", i, iv.State)
		}
		if iv.EarliestNS > after+k+slack || iv.LatestNS < before+k-slack {
			t.Fatalf("read %d: [%d, %d] misses host time + K [%d, %d] (residual %d ns)", i, iv.EarliestNS, iv.LatestNS, before+k, after+k, slack)
		}
		if iv.EarliestNS <= after && iv.LatestNS >= before {
			t.Fatalf("read %d: [%d, %d] holds plain REALTIME %d: not centred on the truth (K = %v)", i, iv.EarliestNS, iv.LatestNS, before, timeAPIK)
		}
		halves = append(halves, iv.HalfWidthNS())
		errs = append(errs, abs(iv.MidNS()-(before+(after-before)/2+k)))
		if i%100 == 99 {
			time.Sleep(20 * time.Millisecond) // 10,000 reads over ~2 s: many updates
		}
	}
	slices.Sort(halves)
	slices.Sort(errs)
	_, sd, _ := x.status(true)
	for _, c := range sd.Combined {
		if c.Clock == "system" {
			t.Logf("%d reads held host time + %v: half-width median %d ns, max %d ns; |midpoint − truth| median %d ns (tightness %.1f); the vote now: half-width %d ns, judged bound %d ns (offset %d ns, |offset| + half-width), %d agreeing; chronyd residual %d ns",
				reads, timeAPIK, halves[len(halves)/2], halves[len(halves)-1], errs[len(errs)/2], float64(halves[len(halves)/2])/float64(max(errs[len(errs)/2], 1)),
				c.HalfWidthNS, c.ErrorBoundNS, c.OffsetNS, c.Agreeing, slack)
		}
	}

	// SIGSTOP: the bound grows at the published rate, then the section is void.
	pid := x.agent.Process.Pid
	stalled := time.Now()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	first, ok := halfWidth(t, r, k, slack)
	time.Sleep(2 * time.Second)
	later, ok2 := halfWidth(t, r, k, slack)
	if !ok || !ok2 || later <= first {
		t.Errorf("stalled agent: half-width %d ns then %d ns 2 s later (readable %v %v): want it growing", first, later, ok, ok2)
	}
	gone := waitVoid(t, r, timeAPIMaxAge+5*time.Second)
	t.Logf("SIGSTOP: half-width %d ns → %d ns in 2 s, void %v after the stall (timeapi.max_age %v)", first, later, gone.Sub(stalled).Round(time.Millisecond), timeAPIMaxAge)
	if gone.Sub(stalled) > timeAPIMaxAge+2*time.Second {
		t.Errorf("void %v after the stall, want by max_age %v", gone.Sub(stalled), timeAPIMaxAge)
	}
	syscall.Kill(pid, syscall.SIGCONT)
	waitReadable(t, r, k, slack, 15*time.Second, "after SIGCONT")

	// A clean stop voids at once; a restart brings the section back to the
	// same reader.
	signalled := time.Now()
	x.stop()
	if _, err := r.Now("system"); !errors.Is(err, timeapi.ErrVoid) && time.Since(signalled) < timeAPIMaxAge-time.Second {
		t.Errorf("after a clean stop: %v, want void", err)
	}
	again := exec.Command(x.agent.Path, x.agent.Args[1:]...)
	var log2 bytes.Buffer
	again.Stderr = &log2
	if err := again.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		again.Process.Kill()
		again.Wait()
		if t.Failed() {
			t.Logf("restarted agent's log:\n%s", log2.String())
		}
	}()
	waitReadable(t, r, k, slack, 40*time.Second, "after a restart")

	// SIGKILL: the interval stays (growing) until max_age, then void.
	killed := time.Now()
	again.Process.Kill()
	again.Wait()
	if _, ok := halfWidth(t, r, k, slack); !ok && time.Since(killed) < timeAPIMaxAge-time.Second {
		t.Errorf("void at once after SIGKILL: want the grown interval until max_age")
	}
	gone = waitVoid(t, r, timeAPIMaxAge+5*time.Second)
	t.Logf("SIGKILL: void %v after the kill", gone.Sub(killed).Round(time.Millisecond))
}

// halfWidth reads the system section once: its half-width and whether it
// was readable; a readable interval must hold host time + k.
func halfWidth(t *testing.T, r *timeapi.Reader, k, slack int64) (int64, bool) {
	t.Helper()
	before := time.Now().UnixNano()
	iv, err := r.Now("system")
	after := time.Now().UnixNano()
	if err != nil {
		return 0, false
	}
	if iv.EarliestNS > after+k+slack || iv.LatestNS < before+k-slack {
		t.Errorf("[%d, %d] misses host time + K [%d, %d]", iv.EarliestNS, iv.LatestNS, before+k, after+k)
	}
	return (iv.LatestNS - iv.EarliestNS + 1) / 2, true
}

// waitVoid reads until the section is void (timeapi.ErrVoid), checking
// every readable interval against the truth, and returns when.
func waitVoid(t *testing.T, r *timeapi.Reader, within time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		_, err := r.Now("system")
		if errors.Is(err, timeapi.ErrVoid) {
			return time.Now()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the system section is not void within %v", within)
	return time.Time{}
}

// waitReadable waits until the section is LOCKED again (the same reader).
func waitReadable(t *testing.T, r *timeapi.Reader, k, slack int64, within time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if iv, err := r.Now("system"); err == nil && iv.State == timeapi.Locked {
			halfWidth(t, r, k, slack)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: the system section is not LOCKED within %v", what, within)
}

// waitTimeLocked runs `monagent time --path P --json` until it exits 0
// with LOCKED, and returns its object.
func waitTimeLocked(t *testing.T, x *xcheckBed, path string, within time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		argv := append(append(append([]string{}, prefix...), bin), "time", "--path", path, "--json")
		cmd := exec.Command(argv[0], argv[1:]...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		var doc map[string]any
		json.Unmarshal(o.Bytes(), &doc)
		if err == nil && doc["state"] == "LOCKED" {
			return doc
		}
		last = o.String() + e.String()
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("monagent time --json not LOCKED within %v: %s\nagent log:\n%s", within, last, x.log.String())
	return nil
}

// TestTimeAPIGlobalTruth: three agents, each in its own namespace, run HCA
// (rank 0 on MONOTONIC_RAW, ranks 1 and 2 on test clocks 0.7 s and 0.9 s
// off, −60 and +85 ppm); every reader's global interval, read from each
// agent's segment, holds rank 0's HCA clock (MONOTONIC_RAW, which the
// namespaces share) read at the same instant, on every read.
func TestTimeAPIGlobalTruth(t *testing.T) {
	clocks := []hcaTestClock{{}, {-700_000_000, -60}, {900_000_000, 85}}
	_, dir, outs, stop := startHCAAgents(t, clocks)
	defer stop()
	waitHCAModels(t, outs)
	deadline := time.Now().Add(30 * time.Second)
	readers := make([]*timeapi.Reader, len(clocks))
	for r := range readers {
		var err error
		path := filepath.Join(dir, strconv.Itoa(r), "time.shm")
		for readers[r] == nil {
			if readers[r], err = timeapi.Open(path); err != nil && time.Now().After(deadline) {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		defer readers[r].Close()
		for {
			iv, err := readers[r].Now("global")
			if err == nil && iv.State == timeapi.Locked {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rank %d: global section not LOCKED within 30 s: %v %v", r, iv, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	const reads = 4000
	halves, trueErr := make([][]int64, len(clocks)), make([][]int64, len(clocks)) // half-widths, |midpoint − truth|
	var errs [3]int
	for i := range reads {
		for r, rd := range readers {
			before, _ := timebase.MonotonicRaw.Now()
			iv, err := rd.Now("global")
			after, _ := timebase.MonotonicRaw.Now()
			if err != nil {
				errs[r]++
				continue
			}
			if iv.EarliestNS > after || iv.LatestNS < before {
				t.Fatalf("rank %d read %d: [%d, %d] misses rank 0's clock [%d, %d] by %d ns", r, i, iv.EarliestNS, iv.LatestNS, before, after, max(iv.EarliestNS-after, before-iv.LatestNS))
			}
			halves[r] = append(halves[r], iv.HalfWidthNS())
			trueErr[r] = append(trueErr[r], abs(iv.MidNS()-(before+(after-before)/2)))
		}
		if i%200 == 199 {
			time.Sleep(100 * time.Millisecond) // 4000 reads per rank over ~2 s: many updates and syncs
		}
	}
	for r, h := range halves {
		if len(h) < reads*9/10 {
			t.Errorf("rank %d: %d of %d reads failed", r, errs[r], reads)
		}
		slices.Sort(h)
		slices.Sort(trueErr[r])
		if len(h) > 0 {
			e := trueErr[r][len(h)/2]
			t.Logf("rank %d: %d reads held rank 0's clock, half-width median %d ns, max %d ns; |midpoint − truth| median %d ns (tightness %.1f); %d failed",
				r, len(h), h[len(h)/2], h[len(h)-1], e, float64(h[len(h)/2])/float64(max(e, 1)), errs[r])
		}
	}
}

func abs(v int64) int64 { return max(v, -v) }
