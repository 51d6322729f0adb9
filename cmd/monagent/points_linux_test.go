package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// lineKey splits a line-protocol line into its measurement and its point key
// (measurement + tag set + timestamp): InfluxDB keeps one point per key.
func lineKey(line string) (measurement, key string) {
	i := 0
	for i < len(line) && line[i] != ' ' && line[i] != ',' {
		if line[i] == '\\' {
			i++
		}
		i++
	}
	measurement = line[:min(i, len(line))]
	j := i
	for j < len(line) && line[j] != ' ' { // the series key ends at the first unescaped space
		if line[j] == '\\' {
			j++
		}
		j++
	}
	series := line[:min(j, len(line))]
	ts := line[strings.LastIndexByte(line, ' ')+1:]
	return measurement, series + " " + ts
}

// pointsIn counts the rows (points) InfluxDB answers to an InfluxQL query.
func pointsIn(t *testing.T, in *testbed.Influxd, db, q string) int {
	t.Helper()
	resp, err := http.PostForm(in.URL+"/query", url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Results []struct {
			Series []struct {
				Values [][]any `json:"values"`
			} `json:"series"`
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || len(r.Results) != 1 || r.Results[0].Error != "" {
		t.Fatalf("influxql %q: %v %+v", q, err, r)
	}
	n := 0
	for _, s := range r.Results[0].Series {
		n += len(s.Values)
	}
	return n
}

// TestEveryWrittenPointReachesInfluxDB runs monagent in a client namespace
// against a real chronyd server with bursts of 3 and a chronyd client (-x)
// beside it, for several polls, through its spool; a second monagent on the
// host (where the testbed's influxd listens) ships that spool. Every point the
// first one wrote must be in InfluxDB: a point that shares measurement + tags +
// time with another would replace it there.
func TestEveryWrittenPointReachesInfluxDB(t *testing.T) {
	const db = "points"
	in := testbed.StartInfluxd(t, db)
	srv, cli := testbed.NewLink(t)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	client := testbed.StartChronyd(t, cli, testbed.ChronydClientConf(srv.Addr.String(), 0, ""))
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	const burst = 3
	cfg := writeConfig(t, dir, fmt.Sprintf(`
host: measured
clock:
  enabled: false
phc:
  enabled: false
paths:
  runtime_dir: %s
ntp:
  enabled: true
  servers:
    - address: %s
      interval: 2s
      burst: %d
      burst_spacing: 200ms
  chrony:
    enabled: true
    socket: %s
    interval: 1s
self_metrics:
  interval: 1s
output:
  stdout: false
  file: out.lp
spool:
  dir: %s
`, dir, srv.Addr, burst, client.Socket, spool))
	// 9 s, and on until two bursts' samples and every measurement checked
	// below are in the output file (it was 9 s, however slowly a loaded
	// machine started the agent).
	_, stderr := runInUntil(t, cli, dir, cfg, 9*time.Second, func(string) bool {
		raw, _ := os.ReadFile(filepath.Join(dir, "out.lp"))
		raw = append([]byte("\n"), raw...)
		for _, m := range []string{"ntp_probe", "chrony_tracking", "chrony_source", "chrony_serverstats"} {
			if !bytes.Contains(raw, []byte("\n"+m+",")) {
				return false
			}
		}
		return bytes.Count(raw, []byte("\nntp_sample,")) >= 2*burst
	})

	raw, err := os.ReadFile(filepath.Join(dir, "out.lp"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if !strings.Contains(stderr, fmt.Sprintf("%d points appended", len(lines))) {
		t.Errorf("the spool did not append the %d points of the output file: %s", len(lines), stderr)
	}
	written := map[string]int{}
	keys := map[string]string{}
	for _, l := range lines {
		m, k := lineKey(l)
		written[m]++
		if prev, dup := keys[k]; dup {
			t.Errorf("two points share measurement + tags + time:\n  %s\n  %s", prev, l)
		}
		keys[k] = l
	}
	for _, m := range []string{"ntp_sample", "ntp_probe", "chrony_tracking", "chrony_source", "chrony_serverstats"} {
		if written[m] == 0 {
			t.Errorf("monagent wrote no %s", m)
		}
	}
	if written["ntp_sample"] < 2*burst {
		t.Fatalf("%d ntp_sample points for at least 2 bursts of %d\n%s", written["ntp_sample"], burst, stderr)
	}

	// Ship the spool from the host, where influxd is.
	shipSpool(t, dir, "shipper", spool, in.URL, db, 4*time.Second)

	names := make([]string, 0, len(written))
	for m := range written {
		names = append(names, m)
	}
	slices.Sort(names)
	t.Logf("%-22s %8s %8s", "measurement", "written", "influxdb")
	for _, m := range names {
		got := pointsIn(t, in, db, fmt.Sprintf(`SELECT * FROM %q WHERE "host"='measured'`, m))
		t.Logf("%-22s %8d %8d", m, written[m], got)
		if got != written[m] {
			t.Errorf("%s: %d points written, %d in InfluxDB", m, written[m], got)
		}
	}
}

// shipSpool runs an agent that measures nothing and only ships the spool at
// spoolDir to the influxd at url (database db) for d, and fails the test if
// it fails; its log is dir/agent.log.
func shipSpool(t *testing.T, dir, host, spoolDir, url, db string, d time.Duration) {
	t.Helper()
	cfg := writeConfig(t, dir, fmt.Sprintf(`
host: %s
clock:
  enabled: false
phc:
  enabled: false
self_metrics:
  enabled: false
output:
  stdout: false
spool:
  dir: %s
influx:
  enabled: true
  url: %s
  bucket: %s/autogen
  token_env: TEST_INFLUX_TOKEN
  batch_interval: 200ms
`, host, spoolDir, url, db))
	drainSpool(t, dir, cfg, d)
}

// drainSpool runs the agent of cfg in dir for d, again (up to 10 runs) until
// its summary says that nothing the spool held before it waits: no more
// points pending than it appended itself (its self-metrics, the last taken
// after its shipper stopped). One run of d was assumed to ship everything,
// which a loaded machine's did not; it ships slower, not less.
func drainSpool(t *testing.T, dir, cfg string, d time.Duration) {
	t.Helper()
	summary := regexp.MustCompile(`: (\d+) points appended, \d+ acknowledged by .*, (\d+) pending`)
	for run := 1; ; run++ {
		err := startAgent(t, dir, cfg, "--duration", d.String()).Wait()
		log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		if err != nil {
			t.Fatalf("shipping agent: %v\n%s", err, log)
		}
		m := summary.FindAllSubmatch(log, -1)
		if len(m) == 0 {
			t.Fatalf("shipping agent: no spool summary in its log\n%s", log)
		}
		appended, _ := strconv.ParseInt(string(m[len(m)-1][1]), 10, 64)
		pending, _ := strconv.ParseInt(string(m[len(m)-1][2]), 10, 64)
		if pending <= appended {
			return
		}
		if run == 10 {
			t.Fatalf("%d points still pending after 10 runs of %v\n%s", pending-appended, d, log)
		}
		t.Logf("run %d of the shipping agent left %d points pending: again", run, pending-appended)
	}
}
