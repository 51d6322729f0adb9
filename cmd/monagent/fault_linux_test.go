package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

const faultDB = "monagent"

// agentConfig is a monagent shipping loadgen points through its spool to influxd.
func agentConfig(t *testing.T, dir, url string, loadgen bool) string {
	return writeConfig(t, dir, fmt.Sprintf(`
clock:
  enabled: false
phc:
  enabled: false
loadgen:
  enabled: %v
  rate: 1000
  interval: 10ms
self_metrics:
  interval: 1s
spool:
  dir: %s
  fsync_interval: 1s
influx:
  enabled: true
  url: %s
  bucket: %s/autogen
  token_env: TEST_INFLUX_TOKEN
  batch_interval: 200ms
`, loadgen, filepath.Join(dir, "spool"), url, faultDB))
}

func startAgent(t *testing.T, dir, cfg string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := command(append([]string{"run", "--config", cfg}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TEST_INFLUX_TOKEN=user:pass")
	logf, _ := os.OpenFile(filepath.Join(dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); logf.Close() })
	return cmd
}

// segments are the names of the spool's segment files in dir.
func segments(dir string) map[string]bool {
	segs, _ := filepath.Glob(filepath.Join(dir, "spool", "*.seg"))
	out := map[string]bool{}
	for _, s := range segs {
		out[filepath.Base(s)] = true
	}
	return out
}

// waitAppended waits up to 30 s for the spool in dir to hold data in a
// segment that is not in before: an agent started after before was taken
// writes its points to a segment of its own, never to an existing one.
func waitAppended(t *testing.T, dir string, before map[string]bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		for name := range segments(dir) {
			if fi, err := os.Stat(filepath.Join(dir, "spool", name)); !before[name] && err == nil && fi.Size() > 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the agent appended nothing to its spool 30 s after its start")
		}
	}
}

type runStats struct {
	count, maxSeq, lastNS int64
}

// loadgenRuns reads, per run, how many loadgen points influxd holds, the highest
// seq and the time of the last point.
func loadgenRuns(t *testing.T, in *testbed.Influxd) map[string]runStats {
	t.Helper()
	out := map[string]runStats{}
	for _, q := range []string{`SELECT COUNT("seq"), MAX("seq") FROM "monagent_loadgen" GROUP BY "run"`, `SELECT LAST("seq") FROM "monagent_loadgen" GROUP BY "run"`} {
		raw := in.Query(faultDB, q)
		for _, s := range raw.Results[0].Series {
			rs := out[s.Tags["run"]]
			v := s.Values[0]
			if len(v) == 3 {
				rs.count, _ = v[1].Int64()
				rs.maxSeq, _ = v[2].Int64()
			} else {
				rs.lastNS, _ = v[0].Int64()
			}
			out[s.Tags["run"]] = rs
		}
	}
	return out
}

// TestKillNineNeverLosesMoreThanTheFsyncInterval kills the agent with SIGKILL at
// 10 random moments while it writes 1000 points/s. After each restart the spool
// reopens by itself; in the end InfluxDB holds every run's points without gaps
// or duplicates, missing at most the last fsync interval before each kill.
func TestKillNineNeverLosesMoreThanTheFsyncInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("fault test with 10 kills; skipped with -short")
	}
	in := testbed.StartInfluxd(t, faultDB)
	dir := t.TempDir()
	cfg := agentConfig(t, dir, in.URL, true)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	var kills []int64
	for i := 0; i < 10; i++ {
		before := segments(dir)
		cmd := startAgent(t, dir, cfg)
		// Killed 0.5 to 3 s after it wrote its first points (not after its
		// start, which a loaded or emulated machine can make late enough
		// that a kill at 0.5 s leaves a run without a point).
		waitAppended(t, dir, before)
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		kills = append(kills, time.Now().UnixNano())
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	// One last agent without load drains what the last kill left in the
	// spool (4 s runs until it has, not one).
	drainSpool(t, dir, agentConfig(t, dir, in.URL, false), 4*time.Second)
	runs := loadgenRuns(t, in)
	if len(runs) != 10 {
		b, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		t.Fatalf("%d runs in InfluxDB, want 10; agent log:\n%s", len(runs), b)
	}
	var ids []int64
	for id := range runs {
		n, _ := strconv.ParseInt(id, 10, 64)
		ids = append(ids, n)
	}
	slices.Sort(ids)
	const fsyncInterval = int64(time.Second)
	const slack = int64(300 * time.Millisecond) // the loadgen interval and the flush interval
	for i, id := range ids {
		r := runs[strconv.FormatInt(id, 10)]
		lost := kills[i] - r.lastNS
		t.Logf("run %d: %d points, seq 0..%d, last point %v before the kill", i, r.count, r.maxSeq, time.Duration(lost))
		if r.count != r.maxSeq+1 {
			t.Errorf("run %d: %d points for seq 0..%d: a gap or a duplicate", i, r.count, r.maxSeq)
		}
		if lost > fsyncInterval+slack {
			t.Errorf("run %d: the last %v before the kill are missing (fsync interval 1 s)", i, time.Duration(lost))
		}
	}
}

// TestSIGTERMDuringOutage: with influxd down, SIGTERM stops the agent within 2 s,
// everything it accepted is on disk, and all of it arrives after a restart.
func TestSIGTERMDuringOutage(t *testing.T) {
	in := testbed.StartInfluxd(t, faultDB)
	in.Stop()
	dir := t.TempDir()
	cmd := startAgent(t, dir, agentConfig(t, dir, in.URL, true))
	time.Sleep(3 * time.Second)
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("agent took %v to exit after SIGTERM", d)
	}
	in.Start()
	drainSpool(t, dir, agentConfig(t, dir, in.URL, false), 4*time.Second)
	runs := loadgenRuns(t, in)
	// The agent's last self-metrics say how many loadgen points it produced.
	res := in.Query(faultDB, `SELECT LAST("records") FROM "monagent_source" WHERE "source"='loadgen'`)
	if len(res.Results[0].Series) == 0 || len(runs) != 1 {
		t.Fatalf("no loadgen self-metrics or %d runs in InfluxDB", len(runs))
	}
	produced, _ := res.Results[0].Series[0].Values[0][1].Int64()
	for _, r := range runs {
		t.Logf("produced %d points before SIGTERM; InfluxDB holds %d (seq 0..%d)", produced, r.count, r.maxSeq)
		if r.count != produced || r.maxSeq+1 != produced {
			t.Fatalf("InfluxDB holds %d points (max seq %d), the agent produced %d", r.count, r.maxSeq, produced)
		}
	}
}
