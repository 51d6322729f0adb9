package main

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestCostBesideNodeExporter (issue 37) measures what `monagent run` costs
// with configs/local.yaml plus one NTP server polled every second (chronyd
// -x serving across a veth pair), side by side in one run with a chronyd
// client of the same server at the same rate and Debian's
// prometheus-node-exporter with its default collectors, scraped every 15 s
// as Prometheus would, and internal/costfloor, the least a Go program does
// for the same work (MONAGENT_COST_FLOOR_STEPS leaves parts of it out):
// CPU time and wake-ups per second of each over the same window, after a
// warm-up. It logs the figures for
// docs/performance.md and asserts nothing about them (a shared machine's
// load moves them); it asserts that the agent measured and wrote
// throughout. It takes the window plus half a minute, so it runs only when
// asked: MONAGENT_COST=2m go test -count=1 -run TestCostBesideNodeExporter -v ./cmd/monagent
func TestCostBesideNodeExporter(t *testing.T) {
	window, err := time.ParseDuration(os.Getenv("MONAGENT_COST"))
	if err != nil {
		t.Skip("set MONAGENT_COST to the window (e.g. 2m) to measure the agent's CPU beside node_exporter")
	}
	ne, err := exec.LookPath("prometheus-node-exporter")
	if err != nil {
		if ne, err = exec.LookPath("node_exporter"); err != nil {
			t.Skip("prometheus-node-exporter not installed (Debian: prometheus-node-exporter)")
		}
	}
	srv, cli := testbed.NewLink(t)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	chrony := testbed.StartChronyd(t, cli, testbed.ChronydClientConf(srv.Addr.String(), 0, ""))

	dir := t.TempDir()
	local, err := os.ReadFile("../../configs/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	conf := string(local)
	for _, r := range [][2]string{
		{"ntp:\n  enabled: false", "ntp:\n  enabled: true"},
		{"- address: 127.0.0.1:123\n      interval: 8s", "- address: " + srv.Addr.String() + ":123\n      interval: 1s"},
		{"dir: ./data/spool", "dir: " + filepath.Join(dir, "spool")},
	} {
		if !strings.Contains(conf, r[0]) {
			t.Fatalf("configs/local.yaml no longer has %q", r[0])
		}
		conf = strings.Replace(conf, r[0], r[1], 1)
	}
	cfg := filepath.Join(dir, "local.yaml")
	if err := os.WriteFile(cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg)
	agent := cli.Command(argv[0], argv[1:]...)
	var agentLog bytes.Buffer
	agent.Stderr = &agentLog
	stdout, err := os.Create(filepath.Join(dir, "stdout.lp")) // as a redirect to a file would take them
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	agent.Stdout = stdout
	size := func() int64 { fi, _ := stdout.Stat(); return fi.Size() }
	nodeExp := cli.Command(ne, "--web.listen-address=127.0.0.1:9100")
	var neLog bytes.Buffer
	nodeExp.Stderr = &neLog
	// The floor: the least a Go program does for the agent's work (see
	// internal/costfloor), beside it in the same window.
	floorSteps := cmp.Or(os.Getenv("MONAGENT_COST_FLOOR_STEPS"), "clocks,ntp,stdout,fsync")
	floorBin := filepath.Join(dir, "costfloor")
	var floorLog bytes.Buffer
	if b, err := exec.Command("go", "build", "-o", floorBin, "../../internal/costfloor").CombinedOutput(); err != nil {
		t.Fatalf("building internal/costfloor: %v\n%s", err, b)
	}
	floor := cli.Command(floorBin, "-server", srv.Addr.String()+":123", "-file", filepath.Join(dir, "floor.dat"), "-steps", floorSteps)
	floor.Stderr = &floorLog
	floor.Stdout = io.Discard
	for _, c := range []*exec.Cmd{agent, nodeExp, floor} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			c.Process.Signal(os.Interrupt)
			c.Wait()
		}()
	}
	defer func() {
		if t.Failed() {
			t.Logf("agent log:\n%s\nnode_exporter log:\n%s\ncostfloor log:\n%s", agentLog.String(), neLog.String(), floorLog.String())
		}
	}()
	scrape := func() int {
		var n int
		err := cli.Do(func() error {
			c, err := net.DialTimeout("tcp", "127.0.0.1:9100", 2*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprintf(c, "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:9100\r\nAccept-Encoding: gzip\r\n\r\n")
			b, err := io.ReadAll(c)
			n = len(b)
			return err
		})
		if err != nil {
			t.Logf("scraping node_exporter: %v", err)
		}
		return n
	}
	const warmup = 20 * time.Second
	time.Sleep(warmup / 2)
	scrape()
	time.Sleep(warmup / 2)

	chronyPid, err := readPid(filepath.Join(chrony.Dir, "chronyd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	procs := []struct {
		name string
		pid  int
	}{{"monagent run", agent.Process.Pid}, {"chronyd client", chronyPid}, {"node_exporter", nodeExp.Process.Pid}, {"costfloor", floor.Process.Pid}}
	load0, _ := os.ReadFile("/proc/loadavg")
	var before, after [4]taskCost
	for i, p := range procs {
		before[i] = costOf(t, p.pid)
	}
	out0 := size()
	start := time.Now()
	scrapes, bytesScraped := 0, 0
	for time.Since(start) < window {
		time.Sleep(min(15*time.Second, window-time.Since(start)))
		if time.Since(start) < window {
			bytesScraped += scrape()
			scrapes++
		}
	}
	for i, p := range procs {
		after[i] = costOf(t, p.pid)
	}
	elapsed := time.Since(start)
	load1, _ := os.ReadFile("/proc/loadavg")
	outBytes := size() - out0
	all, _ := os.ReadFile(stdout.Name())
	ntpLines := bytes.Count(all, []byte("\nntp"))

	var b strings.Builder
	fmt.Fprintf(&b, "%.0f s window after %v warm-up; load average %s before, %s after; node_exporter scraped %d times (%d bytes)\n",
		elapsed.Seconds(), warmup, strings.Join(strings.Fields(string(load0))[:3], " "), strings.Join(strings.Fields(string(load1))[:3], " "), scrapes, bytesScraped)
	fmt.Fprintf(&b, "%-15s %10s %12s %12s %12s %8s\n", "process", "CPU ms", "% of a core", "wake-ups/s", "vol. cs/s", "threads")
	agentCPU := 0.0
	for i, p := range procs {
		cpu := float64(after[i].runNS-before[i].runNS) / 1e6
		if i == 0 {
			agentCPU = cpu
		}
		fmt.Fprintf(&b, "%-15s %10.1f %12.3f %12.1f %12.1f %8d\n", p.name, cpu, 100*cpu/1e3/elapsed.Seconds(),
			float64(after[i].slices-before[i].slices)/elapsed.Seconds(), float64(after[i].voluntary-before[i].voluntary)/elapsed.Seconds(), after[i].threads)
	}
	neCPU := float64(after[2].runNS-before[2].runNS) / 1e6
	floorCPU := float64(after[3].runNS-before[3].runNS) / 1e6
	fmt.Fprintf(&b, "costfloor (%s) / node_exporter CPU: %.2f; monagent / costfloor: %.2f\n", floorSteps, floorCPU/neCPU, agentCPU/floorCPU)
	fmt.Fprintf(&b, "monagent / node_exporter CPU: %.2f; monagent wrote %d bytes of records to stdout in the window (%d ntp lines in all)", agentCPU/neCPU, outBytes, ntpLines)
	t.Log("\n" + b.String())
	if outBytes == 0 || agentCPU <= 0 {
		t.Fatalf("the agent wrote %d bytes in the window, used %.1f ms CPU", outBytes, agentCPU)
	}
	if min := int(window/time.Second) / 2; ntpLines < min {
		t.Fatalf("%d NTP records, want at least %d (one a second)", ntpLines, min)
	}
}

// taskCost is a process's CPU time and wake-ups summed over its threads:
// /proc/<pid>/task/*/schedstat (ns on a CPU, times run on a CPU) and
// status (voluntary context switches).
type taskCost struct {
	runNS, slices, voluntary uint64
	threads                  int
}

func costOf(t *testing.T, pid int) taskCost {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var c taskCost
	for _, task := range tasks {
		base := fmt.Sprintf("/proc/%d/task/%s/", pid, task.Name())
		b, err := os.ReadFile(base + "schedstat")
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			t.Fatalf("%sschedstat: %q", base, b)
		}
		run, _ := strconv.ParseUint(f[0], 10, 64)
		n, _ := strconv.ParseUint(f[2], 10, 64)
		c.runNS += run
		c.slices += n
		c.threads++
		st, err := os.ReadFile(base + "status")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(st))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "voluntary_ctxt_switches:"); ok {
				n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				c.voluntary += n
			}
		}
	}
	return c
}

func readPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}
