package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/status"
)

// fleetAgent is one agent process of the fleet.
type fleetAgent struct {
	host, rack, addr string
	cmd              *exec.Cmd
}

// TestFleet (issue 38): a machine room of 12 boards in 4 racks, each rack's
// three agents (separate processes, host names and rack tags, each on a
// loopback port of its own) probing their rack's NTP server — chronyd -x
// serving host time + K through the testbed's SOCK refclock —, scraped by
// Debian's Prometheus evaluating configs/prometheus/monagent-fleet.yml and
// monagent-rules.yml every 2 s. Every server tells the truth (K = 0) until
// the fleet is in; then rack d's lies by 50 ms, its hosts' judges stay
// LOCKED (their threshold, 1 s, is wide: only the fleet can tell), and
// MonagentHostDeviates names d1, d2, d3 and MonagentRackDeviates rack d,
// each within two evaluation intervals of the scrape that first showed
// the lie; nothing else fires at any time. It logs the
// Prometheus scrape cost per agent and the agents' total CPU, then runs
// every query of configs/grafana/monagent-fleet.json against it
// (TestFleet/dashboard).
func TestFleet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the rack servers are chronyd -x running as root (-u root) on loopback ports of their own (CI runs as root)")
	}
	for _, p := range []string{"chronyd", "chronyc", "prometheus"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (Debian packages chrony, prometheus)", p)
		}
	}
	const (
		perRack = 3
		lie     = 50 * time.Millisecond
		every   = 2 * time.Second // scrape and evaluation interval
	)
	racks := []string{"a", "b", "c", "d"}
	liar := len(racks) - 1

	// The rack servers, truthful to start with.
	var refs []*testbed.RefclockSock
	var servers []*testbed.Chronyd
	var ports []int
	for range racks {
		ref := testbed.NewRefclockSock(t, 0)
		port := freeUDPPort(t)
		servers = append(servers, testbed.StartChronyd(t, testbed.Local,
			testbed.ChronydRefclockConf(ref.Path)+fmt.Sprintf("port %d\nbindaddress 127.0.0.1\n", port)))
		ref.Start(t, 250*time.Millisecond)
		refs, ports = append(refs, ref), append(ports, port)
	}
	for i := range racks {
		waitServing(t, servers[i], 0, 40*time.Second)
	}

	// The agents: host <rack><n>, tags rack and room; the first of each rack
	// also reads its server's chronyd (tracking, sources) over its socket.
	var agents []*fleetAgent
	for i, rack := range racks {
		for n := 1; n <= perRack; n++ {
			a := &fleetAgent{host: fmt.Sprintf("%s%d", rack, n), rack: rack, addr: fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))}
			dir := t.TempDir()
			chrony := ""
			if n == 1 {
				chrony = fmt.Sprintf("  chrony: {enabled: true, socket: %s, interval: 1s, judge: {enabled: false}}\n", servers[i].Socket)
			}
			cfg := writeConfig(t, dir, fmt.Sprintf(`host: %s
tags: {rack: %s, room: lab}
paths: {runtime_dir: %s}
clock: {interval: 1s}
phc: {enabled: false}
spool: {enabled: false}
self_metrics: {interval: 1s}
http: {listen: %s}
ntp:
  enabled: true
  timeout: 500ms
  judge: {threshold: 1s, holdover: 10s, min_samples: 2}
  servers:
    - address: 127.0.0.1:%d
      interval: 1s
%s`, a.host, rack, dir, a.addr, ports[i], chrony))
			a.cmd = startAgent(t, dir, cfg, "--duration", "10m", "--http", a.addr)
			agents = append(agents, a)
			t.Cleanup(func() {
				if t.Failed() {
					log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
					t.Logf("agent %s log:\n%s", a.host, log)
				}
			})
		}
	}
	for _, a := range agents {
		waitMetrics(t, a, []string{"monagent_clock_offset_seconds{", "monagent_ntp_probe_delay_seconds{", "monagent_build_info{"}, 30*time.Second)
	}

	// A board with what this machine cannot give the agents (a PHC, ptp4l,
	// GNSS, PPS, sensors): records of the documented schema through the
	// agent's own conversion (status.Latest), for the dashboard's drill-down.
	sample := sampleBoard(t)

	// Prometheus, scraping every agent and the sample board, with the rules.
	var targets []string
	for _, a := range agents {
		targets = append(targets, "'"+a.addr+"'")
	}
	rules := func(name string) string {
		p, err := filepath.Abs("../../configs/prometheus/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	prom := testbed.StartPrometheusConfig(t, fmt.Sprintf(`global: {scrape_interval: 2s, scrape_timeout: 2s, evaluation_interval: 2s}
rule_files: ['%s', '%s']
scrape_configs:
  - job_name: monagent
    static_configs: [{targets: [%s, '%s']}]
`, rules("monagent-fleet.yml"), rules("monagent-rules.yml"), strings.Join(targets, ", "), sample))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("prometheus log:\n%s", prom.Output())
		}
	})

	// The fleet is in: every host counted by the fleet rules, for 5 more
	// evaluations, with all servers truthful.
	waitFor(t, 60*time.Second, "the fleet rules do not count 12 hosts", func() bool {
		v, err := prom.Query(`fleet_clock:monagent_hosts:count{clock="system"}`, time.Now())
		return err == nil && v == float64(len(agents))
	})
	time.Sleep(5 * every)
	cpu0, wall0 := agentsCPU(t, agents), time.Now()

	// Rack d's server lies from now.
	refs[liar].Stop()
	refs[liar] = &testbed.RefclockSock{Path: refs[liar].Path, Offset: lie}
	refs[liar].Start(t, 250*time.Millisecond)
	swapped := time.Now()
	wantAlerts := map[string]bool{"MonagentRackDeviates/d": true}
	for n := 1; n <= perRack; n++ {
		wantAlerts[fmt.Sprintf("MonagentHostDeviates/d%d", n)] = true
	}
	waitFor(t, 90*time.Second, "the fleet alerts do not all fire within 90 s of the lie", func() bool {
		got := alertsSeen(t, prom, `ALERTS{alertstate="firing"}`, time.Now())
		for k := range wantAlerts {
			if !got[k] {
				return false
			}
		}
		return true
	})
	t.Logf("all fleet alerts firing %v after rack d's server started lying", time.Since(swapped).Round(time.Second))
	time.Sleep(5 * every) // nothing else may join them
	cpu1, wall1 := agentsCPU(t, agents), time.Now()
	end := time.Now()

	// Exactly these fired, and nothing else ever did. Alerts with a for:
	// clause may be pending, not firing, and are logged: rack d's hosts'
	// bound against their lying server is 50 ms, so monagent-rules.yml's
	// MonagentClockErrorBoundHigh (100 µs for 5 minutes) rightly waits on
	// them (and on every host when the agents run emulated, whose NTP round
	// trips make bounds above 100 µs).
	window := fmt.Sprintf("[%ds]", int(end.Sub(wall0).Seconds())+120)
	fired := alertsSeen(t, prom, `ALERTS{alertstate="firing"}`+window, end)
	for k := range fired {
		if !wantAlerts[k] {
			t.Errorf("%s fired; only rack d's hosts and rack d may", k)
		}
	}
	for k := range wantAlerts {
		if !fired[k] {
			t.Errorf("%s never fired", k)
		}
	}
	var pending []string
	for k := range alertsSeen(t, prom, `ALERTS{alertstate="pending"}`+window, end) {
		pending = append(pending, k)
	}
	slices.Sort(pending)
	t.Logf("pending, not firing (a for: clause): %v", pending)

	// Each within two evaluation intervals of the scrape that first showed
	// the lie: a host's own offset past K/2; for the rack, its second host's.
	var firstLie []time.Time
	for n := 1; n <= perRack; n++ {
		host := fmt.Sprintf("d%d", n)
		shown := firstTime(t, prom, fmt.Sprintf(`monagent_clock_offset_seconds{host=%q}[5m]`, host), end, func(v float64) bool { return math.Abs(v) > lie.Seconds()/2 })
		hostFired := firstTime(t, prom, fmt.Sprintf(`ALERTS{alertname="MonagentHostDeviates",alertstate="firing",host=%q}[5m]`, host), end, func(float64) bool { return true })
		firstLie = append(firstLie, shown)
		checkWithin(t, "MonagentHostDeviates for "+host, shown, hostFired, 2*every)
	}
	slices.SortFunc(firstLie, func(a, b time.Time) int { return a.Compare(b) })
	rackFired := firstTime(t, prom, `ALERTS{alertname="MonagentRackDeviates",alertstate="firing",rack="d"}[5m]`, end, func(float64) bool { return true })
	checkWithin(t, "MonagentRackDeviates for rack d", firstLie[1], rackFired, 2*every)

	// The scrape cost per agent, and the agents' CPU.
	for _, q := range []string{
		`avg(avg_over_time(scrape_duration_seconds{job="monagent", instance!="` + sample + `"}[30s]))`,
		`max(max_over_time(scrape_duration_seconds{job="monagent", instance!="` + sample + `"}[30s]))`,
		`avg(scrape_samples_scraped{job="monagent", instance!="` + sample + `"})`,
	} {
		v, err := prom.Query(q, end)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-100s %.6g", q, v)
	}
	cpu := (cpu1 - cpu0).Seconds() / wall1.Sub(wall0).Seconds()
	t.Logf("%d agents' CPU over %v of the run (scraped every %v, probing every 1 s): %.4f cores in all, %.5f per agent (%d CPUs, %s/%s)",
		len(agents), wall1.Sub(wall0).Round(time.Second), every, cpu, cpu/float64(len(agents)), runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)

	t.Run("dashboard", func(t *testing.T) { fleetDashboardQueries(t, prom, end) })
}

// freeUDPPort is a UDP port on 127.0.0.1 that was free a moment ago.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	for range 50 {
		p := testbed.FreePort(t)
		if c, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			c.Close()
			return p
		}
	}
	t.Fatal("no free UDP port on 127.0.0.1")
	return 0
}

// waitServing waits until chronyd serves host + k (its tracking's System
// time within 2 µs of k).
func waitServing(t *testing.T, c *testbed.Chronyd, k time.Duration, within time.Duration) {
	t.Helper()
	waitFor(t, within, fmt.Sprintf("chronyd %s does not serve host + %v", c.Dir, k), func() bool {
		name, corr, _, leap, err := tracking(c)
		return err == nil && name == "TRUE" && leap == "Normal" && math.Abs(corr*1e9-float64(k.Nanoseconds())) < 2000
	})
}

// waitFor polls ok every 200 ms until it holds; the test fails with why
// after within.
func waitFor(t *testing.T, within time.Duration, why string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !ok(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal(why)
		}
	}
}

// waitMetrics waits until the agent's /metrics holds every one of want.
func waitMetrics(t *testing.T, a *fleetAgent, want []string, within time.Duration) {
	t.Helper()
	var body string
	waitFor(t, within, fmt.Sprintf("agent %s: /metrics lacks one of %q after %v", a.host, want, within), func() bool {
		resp, err := http.Get("http://" + a.addr + "/metrics")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		for _, w := range want {
			if !strings.Contains(body, w) {
				return false
			}
		}
		return true
	})
}

// agentsCPU is the CPU time (user + system) the agent processes used so far.
func agentsCPU(t *testing.T, agents []*fleetAgent) time.Duration {
	t.Helper()
	var total time.Duration
	for _, a := range agents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", a.cmd.Process.Pid))
		if err != nil {
			t.Fatalf("agent %s: %v", a.host, err)
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
		// utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		total += time.Duration(ut+st) * time.Second / 100 // USER_HZ
	}
	return total
}

// alertsSeen are the alerts of q (ALERTS series) as alertname/host, or
// alertname/rack for an alert without a host.
func alertsSeen(t *testing.T, p *testbed.Prometheus, q string, at time.Time) map[string]bool {
	t.Helper()
	res, err := p.QueryAll(q, at)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range res {
		who := s.Labels["host"]
		if who == "" {
			who = s.Labels["rack"]
		}
		if who == "" {
			who = s.Labels["instance"]
		}
		out[s.Labels["alertname"]+"/"+who] = true
	}
	return out
}

// firstTime is the time of q's (a range vector's) first sample for which ok
// holds.
func firstTime(t *testing.T, p *testbed.Prometheus, q string, at time.Time, ok func(float64) bool) time.Time {
	t.Helper()
	res, err := p.QueryAll(q, at)
	if err != nil {
		t.Fatal(err)
	}
	var first time.Time
	for _, s := range res {
		for i, v := range s.Values {
			if ok(v) && (first.IsZero() || s.Times[i].Before(first)) {
				first = s.Times[i]
			}
		}
	}
	if first.IsZero() {
		t.Fatalf("%s: no such sample", q)
	}
	return first
}

// checkWithin fails unless fired comes at most within after shown.
func checkWithin(t *testing.T, what string, shown, fired time.Time, within time.Duration) {
	t.Helper()
	d := fired.Sub(shown)
	t.Logf("%s: fired %v after the scrape that showed the lie", what, d)
	if d > within {
		t.Errorf("%s fired %v after the scrape that showed the lie, more than two evaluation intervals (%v)", what, d, within)
	}
}

// sampleBoard serves, on a loopback port until the test ends, /metrics of a
// board named sample-board (rack lab) with a PHC, ptp4l, a GNSS receiver, a
// PPS device and sensors: records of the documented schema
// (docs/schema.md) through the agent's own conversion. It returns the
// address.
func sampleBoard(t *testing.T) string {
	t.Helper()
	labels := prometheus.Labels{"host": "sample-board", "rack": "lab", "room": "lab"}
	l := status.NewLatest(labels)
	reg := prometheus.NewRegistry()
	reg.MustRegister(l)
	prometheus.WrapRegistererWith(labels, reg).MustRegister(status.BuildInfo{Version: "sample", GoVersion: runtime.Version(), Target: "linux/armv7"})
	tags := func(kv ...string) []record.Tag {
		tg := []record.Tag{{Key: "host", Value: "sample-board"}}
		for i := 0; i+1 < len(kv); i += 2 {
			tg = append(tg, record.Tag{Key: kv[i], Value: kv[i+1]})
		}
		return tg
	}
	update := func(k int64) {
		now := time.Now().UnixNano()
		l.Update([]record.Record{
			{Measurement: "phc_offset", Tags: tags("device", "phc0", "clock", "realtime", "clock_name", "CTPS timer"), Fields: []record.Field{
				record.Int("offset_ns", -37_000_000_012+k), record.Int("delay_ns", 1520), record.Int("samples", 9), record.String("method", "extended")}, TimeNS: now},
			{Measurement: "ptp4l_current", Tags: tags(), Fields: []record.Field{record.Int("offset_from_master_ns", -12+k), record.Int("mean_path_delay_ns", 1800), record.Int("steps_removed", 1)}, TimeNS: now},
			{Measurement: "ptp4l_parent", Tags: tags(), Fields: []record.Field{record.String("parent_port", "001122.fffe.334455-1"), record.String("grandmaster", "001122.fffe.334455"),
				record.Int("gm_clock_class", 6), record.Int("gm_priority1", 128)}, TimeNS: now},
			{Measurement: "ptp4l_port", Tags: tags("port", "1"), Fields: []record.Field{record.String("port_state", "SLAVE"), record.Int("port_state_code", 9)}, TimeNS: now},
			{Measurement: "gnss", Tags: tags("class", "tpv", "device", "/dev/ttyS1"), Fields: []record.Field{record.Int("mode", 3)}, TimeNS: now},
			{Measurement: "gnss", Tags: tags("class", "sky", "device", "/dev/ttyS1"), Fields: []record.Field{record.Int("satellites_seen", 12), record.Int("satellites_used", 9)}, TimeNS: now},
			{Measurement: "gnss", Tags: tags("class", "toff", "device", "/dev/ttyS1"), Fields: []record.Field{record.Int("offset_ns", 120_000_000+k)}, TimeNS: now},
			{Measurement: "pps_event", Tags: tags("device", "/dev/pps0", "name", "pps0", "edge", "assert"), Fields: []record.Field{record.Uint("sequence", uint64(k)), record.Int("kernel_ns", k*1e9+250)}, TimeNS: now},
			{Measurement: "sensor", Tags: tags("source", "hwmon", "device", "cpu_thermal", "sensor", "temp1", "kind", "temperature", "unit", "u°C"), Fields: []record.Field{record.Int("value", 48_500_000)}, TimeNS: now},
			{Measurement: "sensor", Tags: tags("source", "hwmon", "device", "ina226", "sensor", "in1", "kind", "voltage", "unit", "nV"), Fields: []record.Field{record.Int("value", 5_020_000_000)}, TimeNS: now},
			{Measurement: "sensor", Tags: tags("source", "hwmon", "device", "ina226", "sensor", "curr1", "kind", "current", "unit", "nA"), Fields: []record.Field{record.Int("value", 410_000_000)}, TimeNS: now},
			{Measurement: "sensor", Tags: tags("source", "hwmon", "device", "ina226", "sensor", "power1", "kind", "power", "unit", "uW"), Fields: []record.Field{record.Int("value", 2_060_000)}, TimeNS: now},
		})
	}
	var k atomic.Int64
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		update(k.Add(1))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
