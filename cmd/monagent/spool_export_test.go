package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/monagent/monagent/sink/spool"
)

// points decodes line protocol into one canonical string per point
// (measurement, tags in key order, fields, time), sorted: what two readings
// of a spool must agree on.
func points(t *testing.T, lp []byte) []string {
	t.Helper()
	var out []string
	d := lineprotocol.NewDecoderWithBytes(lp)
	for d.Next() {
		m, err := d.Measurement()
		if err != nil {
			t.Fatalf("not line protocol: %v", err)
		}
		var tags []string
		for {
			k, v, err := d.NextTag()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			tags = append(tags, string(k)+"="+string(v))
		}
		slices.Sort(tags)
		var fields []string
		for {
			k, v, err := d.NextField()
			if err != nil {
				t.Fatal(err)
			}
			if k == nil {
				break
			}
			fields = append(fields, string(k)+"="+v.String())
		}
		tb, err := d.TimeBytes()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m)+","+strings.Join(tags, ",")+" "+strings.Join(fields, ",")+" "+string(tb))
	}
	slices.Sort(out)
	return out
}

// spoolPoints reads the spool in dir as the report does (spool.ReadDir).
func spoolPoints(t *testing.T, dir string) []string {
	t.Helper()
	var all []byte
	if _, err := spool.ReadDir(dir, func(e spool.Entry) error {
		all = append(all, e.Lines...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return points(t, all)
}

// contains reports whether the sorted multiset sub is within the sorted set.
func contains(set, sub []string) bool {
	i := 0
	for _, p := range sub {
		for i < len(set) && set[i] < p {
			i++
		}
		if i == len(set) || set[i] != p {
			return false
		}
		i++
	}
	return true
}

// Issue 38 item 7: 'spool export' beside a running agent (the real binary)
// writes line protocol of what the spool holds; after the agent stops, its
// export holds every point the agent appended, the points 'report' reads
// from the spool give the same report from the exported file, and the
// filters select exactly what they name.
func TestSpoolExportBesideTheAgent(t *testing.T) {
	dir := t.TempDir()
	spoolDir := filepath.Join(dir, "spool")
	cfg := writeConfig(t, dir, "clock:\n  interval: 50ms\n  clocks: [realtime, tai]\n  timex: true\noutput:\n  stdout: false\n"+
		"spool:\n  enabled: true\n  dir: "+spoolDir+"\n  segment_bytes: 4096\n  flush_interval: 20ms\n")
	agent := command("run", "--config", cfg)
	agent.Dir = dir
	var agentErr strings.Builder
	agent.Stderr = &agentErr
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer agent.Process.Kill()
	waitWritten(t, filepath.Join(spoolDir, "*.seg"))

	var running [][]string
	for i := 0; i < 3; i++ {
		time.Sleep(700 * time.Millisecond)
		out := filepath.Join(dir, "running.lp")
		if _, stderr, code := run(t, dir, "spool", "export", "--config", cfg, "--output", out); code != 0 {
			t.Fatalf("export %d beside the agent: exit %d: %s", i, code, stderr)
		}
		b, _ := os.ReadFile(out)
		running = append(running, points(t, b))
	}
	stdout, _, code := run(t, dir, "spool", "stats", "--config", cfg)
	if code != 0 || !strings.Contains(stdout, "points pending") {
		t.Fatalf("stats beside the agent: %d %q", code, stdout)
	}
	agent.Process.Signal(os.Interrupt)
	if err := agent.Wait(); err != nil {
		t.Fatalf("the agent, after the exports: %v\n%s", err, agentErr.String())
	}
	m := regexp.MustCompile(`spool \S+: (\d+) points appended`).FindStringSubmatch(agentErr.String())
	if m == nil {
		t.Fatalf("the agent does not say how many points it appended:\n%s", agentErr.String())
	}
	appended, _ := strconv.Atoi(m[1])

	stdout, stderr, code := run(t, dir, "spool", "export", "--config", cfg)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	all := points(t, []byte(stdout))
	if want := spoolPoints(t, spoolDir); len(all) != appended || !slices.Equal(all, want) {
		t.Fatalf("export: %d points, the agent appended %d, the spool's reader reads %d", len(all), appended, len(want))
	}
	for i, r := range running {
		if len(r) == 0 || !contains(all, r) || (i > 0 && len(r) < len(running[i-1])) {
			t.Fatalf("export %d beside the agent: %d points, not all among the %d of the end (or fewer than before)", i, len(r), len(all))
		}
	}
	if len(running[2]) == len(all) {
		t.Errorf("the exports beside the agent saw all %d points: they did not run while it wrote", len(all))
	}

	// The report of the exported file is the report of the spool.
	lp := filepath.Join(dir, "all.lp")
	os.WriteFile(lp, []byte(stdout), 0o644)
	rep := func(in string) string {
		out, stderr, code := run(t, dir, "report", "--input", in, "--measurement", "clock_offset", "--field", "offset_ns", "--format", "json")
		if code != 0 {
			t.Fatalf("report --input %s: exit %d: %s", in, code, stderr)
		}
		return out
	}
	if a, b := rep(spoolDir), rep(lp); a != b || !strings.Contains(a, `"n":`) {
		t.Errorf("report of the spool:\n%s\nreport of its export:\n%s", a, b)
	}

	// --measurement, --start and --stop select exactly those points.
	var times []int64
	for _, p := range all {
		if strings.HasPrefix(p, "clock_offset,") {
			ts, _ := strconv.ParseInt(p[strings.LastIndexByte(p, ' ')+1:], 10, 64)
			times = append(times, ts)
		}
	}
	slices.Sort(times)
	lo, hi := times[len(times)/4], times[3*len(times)/4]
	var want []string
	for _, p := range all {
		ts, _ := strconv.ParseInt(p[strings.LastIndexByte(p, ' ')+1:], 10, 64)
		if strings.HasPrefix(p, "clock_offset,") && ts >= lo && ts <= hi {
			want = append(want, p)
		}
	}
	rfc := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	stdout, stderr, code = run(t, dir, "spool", "export", "--config", cfg, "--measurement", "clock_offset", "--start", rfc(lo), "--stop", rfc(hi))
	if got := points(t, []byte(stdout)); code != 0 || !slices.Equal(got, want) {
		t.Fatalf("export of clock_offset in [%d, %d]: exit %d %s: %d points, want %d", lo, hi, code, stderr, len(got), len(want))
	}
	// A duration before now: every point is within the last hour.
	stdout, _, code = run(t, dir, "spool", "export", "--config", cfg, "--start", "-1h")
	if got := points(t, []byte(stdout)); code != 0 || !slices.Equal(got, all) {
		t.Errorf("export --start -1h: exit %d, %d points, want %d", code, len(got), len(all))
	}
}

// Bad flags exit 2 with one line saying what is wrong; a directory that is
// no spool is named in one line; the help shows the command.
func TestSpoolExportUsage(t *testing.T) {
	dir := t.TempDir()
	notSpool := filepath.Join(dir, "notes")
	os.MkdirAll(notSpool, 0o755)
	os.WriteFile(filepath.Join(notSpool, "a.txt"), []byte("hi"), 0o644)
	cfg := writeConfig(t, dir, "spool:\n  enabled: true\n  dir: "+notSpool+"\n")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--start", "yesterday"}, 2, `--start/--stop "yesterday" is neither an RFC 3339 time nor a duration`},
		{[]string{"--start", "-1h", "--stop", "-2h"}, 2, "--start -1h is after --stop -2h"},
		{[]string{"--dry-run"}, 2, "spool export: no --dry-run"},
		{[]string{"--bogus"}, 2, "flag provided but not defined: -bogus"},
		{[]string{"extra"}, 2, `unexpected arguments ["extra"]`},
		{[]string{"--config", cfg}, 1, notSpool + " is not a spool: 1 entries and none of a spool's"},
		{nil, 1, "no spool at ./data/spool"},
	} {
		_, stderr, code := run(t, dir, append([]string{"spool", "export"}, c.args...)...)
		if code != c.code || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("spool export %q: exit %d, %q; want exit %d and one line with %q", c.args, code, stderr, c.code, c.want)
		}
	}
	if _, stderr, code := run(t, dir, "spool", "stats", "--config", cfg, "--measurement", "m"); code != 2 || !strings.Contains(stderr, "spool stats: no --measurement") {
		t.Errorf("stats with an export flag: exit %d %q", code, stderr)
	}
	stdout, _, _ := run(t, dir, "--help")
	for _, want := range []string{"replay-deadletter|stats|export", "--measurement M      export: only records of measurement M", "--output FILE"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("monagent --help lacks %q", want)
		}
	}
}
