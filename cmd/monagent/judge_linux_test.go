package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/status"
)

// webhookLog is a CloudEvents receiver: every event with the time it came.
type webhookLog struct {
	mu     sync.Mutex
	events []map[string]any
	got    []time.Time
}

func (w *webhookLog) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	var e map[string]any
	b, _ := io.ReadAll(r.Body)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // time_ns is an exact integer
	if err := dec.Decode(&e); err != nil || r.Header.Get("Content-Type") != "application/cloudevents+json; charset=utf-8" {
		rw.WriteHeader(http.StatusBadRequest)
		return
	}
	w.mu.Lock()
	w.events, w.got = append(w.events, e), append(w.got, time.Now())
	w.mu.Unlock()
}

// hookAndPort serves hooks in h's namespace until the test ends, and
// returns its address and a free loopback address there for the agent's
// http.listen.
func hookAndPort(t *testing.T, h *testbed.Host, hooks *webhookLog) (hookAddr, agentAddr string) {
	t.Helper()
	var hookLn, portLn net.Listener
	if err := h.Do(func() (err error) {
		if hookLn, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		portLn, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	hookSrv := &http.Server{Handler: hooks}
	go hookSrv.Serve(hookLn)
	t.Cleanup(func() { hookSrv.Close() })
	agentAddr = portLn.Addr().String()
	portLn.Close()
	return hookLn.Addr().String(), agentAddr
}

// transitions are the received state changes' data (io.monagent.sync-state.v1),
// in order, and when each came.
func (w *webhookLog) transitions() ([]map[string]any, []time.Time) {
	return w.ofType(status.StateChangeType)
}

// ofType are the received events of CloudEvents type typ: their data, in
// order, and when each came.
func (w *webhookLog) ofType(typ string) ([]map[string]any, []time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []map[string]any
	var got []time.Time
	for i, e := range w.events {
		if e["type"] != typ {
			continue
		}
		d, _ := e["data"].(map[string]any)
		out, got = append(out, d), append(got, w.got[i])
	}
	return out, got
}

// inNS is an HTTP client whose connections are made inside h's namespace.
func inNS(h *testbed.Host) *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		err := h.Do(func() (err error) { c, err = (&net.Dialer{}).DialContext(ctx, network, addr); return })
		return c, err
	}}}
}

// TestJudgeNTPProbeThroughAnOutage (issue 23): the own NTP probe judges the
// system clock against a chronyd server across a veth pair. LOCKED after
// min_samples; the server killed: HOLDOVER at the first missed poll, then
// FREERUN when the holdover runs out (or its predicted bound passes the
// threshold); the server back: LOCKED again. A webhook receiver gets each
// transition once and in order, `monagent status` reports it and exits as
// documented, and Debian's Prometheus scraping the agent sees
// monagent_sync_state.
func TestJudgeNTPProbeThroughAnOutage(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	server := testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	hooks := &webhookLog{}
	hookAddr, agentAddr := hookAndPort(t, cli, hooks)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	const holdover = 3 * time.Second
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ntp:
  enabled: true
  timeout: 500ms
  judge: {threshold: 5ms, holdover: %s, min_samples: 2}
  servers:
    - address: %s
      interval: 1s
output: {file: %s}
spool: {enabled: false}
self_metrics: {interval: 1s}
http: {listen: %s}
notify: {webhooks: [http://%s/hook], max_backoff: 1s}
`, holdover, srv.Addr, out, agentAddr, hookAddr))
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", "90s")
	agent := cli.Command(argv[0], argv[1:]...)
	var agentLog bytes.Buffer
	agent.Stderr = &agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		agent.Process.Signal(os.Interrupt)
		agent.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", agentLog.String())
		}
	}()
	statusOf := func() (int, status.Doc, string) {
		sargv := append(append(append([]string{}, prefix...), bin), "status", "--url", "http://"+agentAddr, "--json")
		cmd := cli.Command(sargv[0], sargv[1:]...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		code := 0
		if err := cmd.Run(); err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		var d status.Doc
		json.Unmarshal(o.Bytes(), &d)
		return code, d, e.String()
	}
	waitState := func(want string, within time.Duration) status.Doc {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			code, d, stderr := statusOf()
			if len(d.Clocks) == 1 && d.Clocks[0].State == want {
				if wantCode := map[bool]int{true: 0, false: 1}[want == "LOCKED"]; code != wantCode {
					t.Fatalf("status exit %d with the clock %s, want %d (%s)", code, want, wantCode, stderr)
				}
				return d
			}
			if time.Now().After(deadline) {
				t.Fatalf("not %s within %v: exit %d, %+v %s", want, within, code, d, stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	d := waitState("LOCKED", 20*time.Second)
	c := d.Clocks[0]
	if c.Clock != "system" || c.Source != "ntp:"+srv.Addr.String()+":123" || c.ErrorBoundNS <= 0 || c.ErrorBoundNS > 5_000_000 || c.LastSampleNS == 0 {
		t.Fatalf("locked clock %+v", c)
	}
	t.Logf("LOCKED: offset %d ns, bound %d ns", c.OffsetNS, c.ErrorBoundNS)
	checkPrometheus(t, cli, agentAddr)

	server.Stop()
	stopped := time.Now()
	waitState("HOLDOVER", 5*time.Second)
	waitState("FREERUN", holdover+5*time.Second)
	server.Start()
	waitState("LOCKED", 20*time.Second)

	trs, got := hooks.transitions()
	want := [][2]string{{"UNKNOWN", "LOCKED"}, {"LOCKED", "HOLDOVER"}, {"HOLDOVER", "FREERUN"}, {"FREERUN", "LOCKED"}}
	deadline := time.Now().Add(5 * time.Second)
	for len(trs) < len(want) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		trs, got = hooks.transitions()
	}
	if len(trs) != len(want) {
		t.Fatalf("webhook got %d transitions, want %d: %v", len(trs), len(want), trs)
	}
	for i, w := range want {
		if trs[i]["from"] != w[0] || trs[i]["to"] != w[1] {
			t.Errorf("transition %d: %v -> %v, want %s -> %s", i, trs[i]["from"], trs[i]["to"], w[0], w[1])
		}
	}
	ns := func(i int) int64 { v, _ := trs[i]["time_ns"].(json.Number).Int64(); return v }
	// The holdover ends holdover after the reference was lost, or earlier
	// when the predicted bound passes the threshold, dated then.
	if gap := time.Duration(ns(2) - ns(1)); gap > holdover || (gap < holdover-time.Millisecond && trs[2]["reason"] != "predicted bound over threshold") {
		t.Errorf("HOLDOVER at %d, FREERUN at %d (%v later, %v): want the holdover's %v, or earlier by prediction", ns(1), ns(2), gap, trs[2]["reason"], holdover)
	}
	lost := time.Unix(0, ns(1)).Sub(stopped)
	t.Logf("server stopped; reference lost %v later (the next poll's timeout), FREERUN %v after that (%v)", lost, time.Duration(ns(2)-ns(1)), trs[2]["reason"])
	for i := range trs {
		t.Logf("transition %d %v->%v (%v): webhook %v after its time", i, trs[i]["from"], trs[i]["to"], trs[i]["reason"], got[i].Sub(time.Unix(0, ns(i))))
	}
	// The same transitions are records, at the same times.
	agent.Process.Signal(os.Interrupt)
	agent.Wait()
	lp, _ := os.ReadFile(out)
	var states []string
	for _, l := range strings.Split(string(lp), "\n") {
		if strings.HasPrefix(l, "sync_state,") {
			states = append(states, l)
		}
	}
	if len(states) != len(want) {
		t.Fatalf("%d sync_state records, want %d:\n%s", len(states), len(want), strings.Join(states, "\n"))
	}
	for i, l := range states {
		if !strings.HasSuffix(l, fmt.Sprintf(" %d", ns(i))) || !strings.Contains(l, fmt.Sprintf(`to="%s"`, want[i][1])) {
			t.Errorf("sync_state %d: %s, want to=%s at %d", i, l, want[i][1], ns(i))
		}
	}
}

// checkPrometheus starts Debian's prometheus in h's namespace scraping the
// agent every second and asks its HTTP API for monagent_sync_state.
func checkPrometheus(t *testing.T, h *testbed.Host, target string) {
	t.Helper()
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Log("prometheus not installed (Debian: prometheus): the scrape by a real server is not checked")
		return
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	os.WriteFile(conf, []byte(fmt.Sprintf("global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n  - job_name: monagent\n    static_configs: [{targets: ['%s']}]\n", target)), 0o644)
	var ln net.Listener
	if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", "127.0.0.1:0"); return }); err != nil {
		t.Fatal(err)
	}
	promAddr := ln.Addr().String()
	ln.Close()
	p := h.Command("prometheus", "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr)
	var plog bytes.Buffer
	p.Stdout, p.Stderr = &plog, &plog
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { p.Process.Kill(); p.Wait() }()
	client := inNS(h)
	q := "http://" + promAddr + "/api/v1/query?query=" + url.QueryEscape(`monagent_sync_state{state="LOCKED",job="monagent"}`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(q)
		if err == nil {
			var r struct {
				Status string `json:"status"`
				Data   struct {
					Result []struct {
						Metric map[string]string `json:"metric"`
						Value  [2]any            `json:"value"`
					} `json:"result"`
				} `json:"data"`
			}
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if len(r.Data.Result) == 1 && r.Data.Result[0].Value[1] == "1" && r.Data.Result[0].Metric["clock"] == "system" {
				t.Logf("prometheus: %v", r.Data.Result[0].Metric)
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus has no monagent_sync_state{state=LOCKED} = 1 after 30 s (%v)\n%s", err, plog.String())
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestPrometheusOnlyBoardAndABlockedSource: with the spool, InfluxDB and
// every output off, the agent still serves /metrics and /status; and a scrape
// never waits for a source, here an NTP probe blocked on a server that never
// answers (30 s timeout: a scrape that waited for it would take many
// seconds, told from an answer by a 5 s bound a loaded machine keeps; it was
// 5 s against 1 s).
func TestPrometheusOnlyBoardAndABlockedSource(t *testing.T) {
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: true, interval: 200ms}
phc: {enabled: false}
ntp:
  enabled: true
  timeout: 30s
  servers: [{address: "%s", interval: 1s}]
output: {stdout: false}
spool: {enabled: false}
self_metrics: {interval: 500ms}
`, silent.LocalAddr()))
	if _, stderr, code := run(t, dir, "config", "check", cfg); code != 0 {
		t.Fatalf("a Prometheus-only configuration is refused: %s", stderr)
	}
	startAgent(t, dir, cfg, "--duration", "20s", "--http", addr)
	defer logOnFailure(t, filepath.Join(dir, "agent.log"))
	// The probe's first poll blocks for its timeout from the start; the
	// scrapes wait until the agent listens (a loaded or emulated machine
	// may take longer than the 1.5 s to start it).
	time.Sleep(1500 * time.Millisecond)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the agent does not listen on %s 30 s on: %v", addr, err)
		}
	}
	for _, path := range []string{"/metrics", "/status"} {
		start := time.Now()
		resp, err := http.Get("http://" + addr + path)
		took := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if took > 5*time.Second || resp.StatusCode != 200 {
			t.Errorf("%s took %v (HTTP %d) while a source blocks", path, took, resp.StatusCode)
		}
		want := []string{`monagent_sync_state{clock="system",source="ntp:` + silent.LocalAddr().String() + `",state="UNKNOWN"} 1`,
			`monagent_source_collections_total{source="clock"}`, "process_resident_memory_bytes"}
		if path == "/status" {
			want = []string{`"state": "UNKNOWN"`, `"error_bound_ns": -1`}
		}
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s lacks %s", path, w)
			}
		}
		t.Logf("%s answered in %v while the NTP probe waits for its server", path, took)
	}
}

// TestJudgePtp4lThroughMasterLoss: the ptp4l source judges the clock a
// free-running ptp4l slave follows; LOCKED while its port is SLAVE, then,
// its master stopped, HOLDOVER once the port leaves SLAVE, FREERUN when the
// holdover is up.
func TestJudgePtp4lThroughMasterLoss(t *testing.T) {
	hosts := testbed.NewBridge(t, 2)
	master := testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
	slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{})
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
	out := filepath.Join(dir, "out.lp")
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ptp:
  enabled: true
  ptp4l:
    enabled: true
    socket: %s
    interval: 500ms
    judge: {threshold: 1ms, holdover: 2s, min_samples: 2}
output: {file: %s}
spool: {enabled: false}
`, slave.Socket, out))
	startAgent(t, dir, cfg, "--duration", "60s", "--http", addr)
	defer logOnFailure(t, filepath.Join(dir, "agent.log"), slave.Log)
	wait := func(want string, within time.Duration) status.Clock {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			d, err := status.Fetch(ctx, "http://"+addr)
			cancel()
			if err == nil && len(d.Clocks) == 1 && d.Clocks[0].State == want {
				return d.Clocks[0]
			}
			if time.Now().After(deadline) {
				t.Fatalf("not %s within %v: %+v %v", want, within, d, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	c := wait("LOCKED", 30*time.Second)
	if c.Clock != "ptp4l" || c.Source != "ptp4l:"+slave.Socket || c.ErrorBoundNS <= 0 {
		t.Fatalf("locked: %+v", c)
	}
	t.Logf("LOCKED: offset %d ns, bound %d ns (|offset| + mean path delay)", c.OffsetNS, c.ErrorBoundNS)
	master.Stop()
	stopped := time.Now()
	h := wait("HOLDOVER", 20*time.Second)
	f := wait("FREERUN", 10*time.Second)
	t.Logf("master stopped; HOLDOVER %v later (the slave's announce timeout), FREERUN %v after it",
		time.Unix(0, h.SinceNS).Sub(stopped), time.Duration(f.SinceNS-h.SinceNS))
	if d := time.Duration(f.SinceNS - h.SinceNS); d > 2*time.Second {
		t.Errorf("FREERUN %v after HOLDOVER, want at most the 2 s holdover", d)
	}
}

// logOnFailure logs the files (an agent's, a peer's) when the test failed.
func logOnFailure(t *testing.T, files ...string) {
	if !t.Failed() {
		return
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		t.Logf("%s:\n%s", f, b)
	}
}
