package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/status"
)

// TestCrossCheckNTPServersOneLies (issue 35): the agent's own NTP probe
// polls three chronyd -x, each serving host time + K through a SOCK
// refclock: two with K = 0, one with K = +5 ms (its own judge LOCKED: the
// threshold is 20 ms, so only the vote can catch it). The liar becomes
// monagent_reference_agrees 0 and "agrees": false in `status --json`
// (FALSETICKER in the table, exit 1); the true ones are never flagged; the
// combined interval contains the truth (0: the agent's clock is the
// servers' host clock) at every read. Then the liar tells the truth (K = 0)
// and is trusted again, and lies anew while running (K = −200 µs): it is
// named within 3 of its lying polls (the detection latency is logged, in
// polls and seconds).
func TestCrossCheckNTPServersOneLies(t *testing.T) {
	testbed.RequireRoot(t)
	for _, p := range []string{"chronyd", "chronyc"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (Debian package chrony)", p)
		}
	}
	srv, cli := testbed.NewLink(t)
	ks := []time.Duration{0, 0, 5 * time.Millisecond}
	refs := make([]*testbed.RefclockSock, len(ks))
	servers := make([]*testbed.Chronyd, len(ks))
	names := make([]string, len(ks))
	for i, k := range ks {
		refs[i] = testbed.NewRefclockSock(t, k)
		port := 12301 + i
		servers[i] = testbed.StartChronyd(t, srv, testbed.ChronydRefclockConf(refs[i].Path)+fmt.Sprintf("port %d\n", port))
		refs[i].Start(t, 250*time.Millisecond)
		names[i] = fmt.Sprintf("ntp:%s:%d", srv.Addr, port)
	}
	liar := 2
	// residual is the most a chronyd's served time strayed from host + K
	// by its own report: the slack the truth is checked with.
	residual := 0.0
	serving := func(i int, k time.Duration, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			name, corr, _, leap, err := tracking(servers[i])
			if err == nil && name == "TRUE" && leap == "Normal" && math.Abs(corr*1e9-float64(k.Nanoseconds())) < 2000 {
				residual = max(residual, math.Abs(corr*1e9-float64(k.Nanoseconds())))
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("chronyd %d does not serve host + %v within %v: %s %g %s %v", i, k, within, name, corr, leap, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for i, k := range ks {
		serving(i, k, 40*time.Second)
	}

	hooks := &webhookLog{}
	var portLn, hookLn net.Listener
	if err := cli.Do(func() (err error) {
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
	defer hookSrv.Close()
	agentAddr := portLn.Addr().String()
	portLn.Close()
	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	var list strings.Builder
	for i := range ks {
		fmt.Fprintf(&list, "    - address: %s:%d\n      interval: 1s\n", srv.Addr, 12301+i)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ntp:
  enabled: true
  timeout: 500ms
  judge: {threshold: 20ms, holdover: 10s, min_samples: 2}
  servers:
%soutput: {file: %s}
spool: {enabled: false}
self_metrics: {interval: 1s}
http: {listen: %s}
notify: {webhooks: [http://%s/hook], max_backoff: 1s}
`, list.String(), out, agentAddr, hookLn.Addr()))
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", "240s")
	agent := cli.Command(argv[0], argv[1:]...)
	var agentLog bytes.Buffer
	agent.Stderr = &agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			agent.Process.Signal(os.Interrupt)
			agent.Wait()
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", agentLog.String())
		}
	}()

	// agreesNow reads /metrics in the agent's namespace: each server's
	// monagent_reference_agrees (-1: absent), and whether the combined bound
	// is there.
	agreesNow := func() ([]float64, bool) {
		var body string
		cli.Do(func() error {
			c := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := c.Get("http://" + agentAddr + "/metrics")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			body = string(b)
			return err
		})
		got := []float64{-1, -1, -1}
		for _, l := range strings.Split(body, "\n") {
			if !strings.HasPrefix(l, "monagent_reference_agrees{") {
				continue
			}
			for i, n := range names {
				if strings.Contains(l, `source="`+n+`"`) {
					got[i], _ = strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
				}
			}
		}
		return got, strings.Contains(body, "monagent_clock_combined_error_bound_seconds{")
	}
	statusOf := func(asJSON bool) (int, status.Doc, string) {
		sargv := append(append(append([]string{}, prefix...), bin), "status", "--url", "http://"+agentAddr)
		if asJSON {
			sargv = append(sargv, "--json")
		}
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
		if asJSON {
			json.Unmarshal(o.Bytes(), &d)
		}
		return code, d, o.String() + e.String()
	}
	reads, truthReads := 0, 0
	// until polls /metrics (and /status every fourth read) until the three
	// agrees are want, checking at every read that no true server is
	// flagged and the combined interval holds the truth.
	until := func(want []float64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for i := 0; ; i++ {
			got, bound := agreesNow()
			reads++
			if got[0] == 0 || got[1] == 0 {
				t.Fatalf("a true server is flagged: agrees %v", got)
			}
			if i%4 == 0 {
				_, d, _ := statusOf(true)
				for _, c := range d.Combined {
					if c.Clock == "system" && c.ErrorBoundNS >= 0 {
						truthReads++
						// The truth, 0, within [offset − half width, offset + half width].
						if math.Abs(float64(c.OffsetNS)) > float64(c.HalfWidthNS)+residual {
							t.Errorf("combined interval %d ± %d ns misses the truth 0 (residual %.0f ns): %+v", c.OffsetNS, c.HalfWidthNS, residual, c)
						}
					}
				}
			}
			if fmt.Sprint(got) == fmt.Sprint(want) {
				if !bound {
					t.Fatalf("/metrics has no monagent_clock_combined_error_bound_seconds")
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("agrees %v after %v, want %v", got, within, want)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	start := time.Now()
	until([]float64{1, 1, 0}, 60*time.Second)
	t.Logf("the +5 ms server is a falseticker %v after the agent started", time.Since(start).Round(time.Millisecond))
	code, d, _ := statusOf(true)
	flags := map[string]string{}
	for _, c := range d.Clocks {
		if c.Agrees != nil {
			flags[c.Source] = fmt.Sprint(*c.Agrees)
		}
	}
	if flags[names[0]] != "true" || flags[names[1]] != "true" || flags[names[liar]] != "false" || code != 1 {
		t.Fatalf("status --json: agrees %v, exit %d; want true, true, false and exit 1 (a falseticker named)", flags, code)
	}
	if len(d.Combined) != 1 || d.Combined[0].State != "LOCKED" || d.Combined[0].Agreeing != 2 || fmt.Sprint(d.Combined[0].Falsetickers) != "["+names[liar]+"]" {
		t.Fatalf("combined %+v: want LOCKED, 2 agreeing, the liar named", d.Combined)
	}
	_, _, table := statusOf(false)
	t.Logf("monagent status:\n%s", table)
	if !strings.Contains(table, "FALSETICKER") {
		t.Fatalf("the table does not mark the falseticker:\n%s", table)
	}

	// The liar tells the truth: trusted again after its dwell.
	swap := func(k time.Duration) time.Time {
		refs[liar].Stop()
		refs[liar] = &testbed.RefclockSock{Path: refs[liar].Path, Offset: k}
		refs[liar].Start(t, 250*time.Millisecond)
		return time.Now()
	}
	swap(0)
	serving(liar, 0, 30*time.Second)
	until([]float64{1, 1, 1}, 30*time.Second)

	// And lies again while running.
	const k2 = -200 * time.Microsecond
	changed := swap(k2)
	until([]float64{1, 1, 0}, 30*time.Second)
	flagged := time.Now()
	serving(liar, k2, 10*time.Second)
	stop()

	lp, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// The falseticker records, and the liar's polls that lied (measured
	// local − server beyond 100 µs: the truth against it is −K2 = +200 µs).
	var named []int64
	for _, l := range strings.Split(string(lp), "\n") {
		if !strings.HasPrefix(l, "reference_check,") {
			continue
		}
		at, _ := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
		isLiar := strings.Contains(l, "source="+names[liar]+",") || strings.Contains(l, "source="+names[liar]+" ")
		bad := strings.Contains(l, `to="falseticker"`) || strings.Contains(l, `to="disputed"`)
		if bad && !isLiar {
			t.Errorf("a true server named: %s", l)
		}
		if bad && isLiar && strings.Contains(l, `to="falseticker"`) {
			named = append(named, at)
		}
	}
	if len(named) != 2 {
		t.Fatalf("%d falseticker records for the liar, want 2 (+5 ms, then −200 µs)", len(named))
	}
	// The same verdicts went to the webhook, at the records' times.
	evs, _ := hooks.ofType(status.ReferenceCheckType)
	var evNamed []int64
	for _, e := range evs {
		if e["to"] == "falseticker" && e["source"] == names[liar] {
			n, _ := e["time_ns"].(json.Number).Int64()
			evNamed = append(evNamed, n)
		}
	}
	if fmt.Sprint(evNamed) != fmt.Sprint(named) {
		t.Errorf("reference-check events naming the liar at %v, records at %v", evNamed, named)
	}
	var lying []int64
	for _, r := range gpioRecords(t, string(lp), "ntp_probe") {
		off, ok := r.fields["offset_ns"]
		if r.tags["server"] != fmt.Sprintf("%s:%d", srv.Addr, 12301+liar) || !ok {
			continue
		}
		o, _ := strconv.ParseInt(strings.TrimSuffix(off, "i"), 10, 64)
		if r.time > changed.UnixNano() && r.time <= named[1] && o > 100_000 {
			lying = append(lying, r.time)
		}
	}
	if len(lying) == 0 || len(lying) > 3 {
		t.Fatalf("the −200 µs liar was named after %d lying polls, want 1 to 3", len(lying))
	}
	t.Logf("K −200 µs: named at its lying poll %d, %v after its first lying poll, %v after K changed (chronyd follows its refclock within a few polls); %v until /metrics said so",
		len(lying), time.Duration(named[1]-lying[0]).Round(time.Millisecond), time.Duration(named[1]-changed.UnixNano()).Round(time.Millisecond),
		flagged.Sub(changed).Round(time.Millisecond))
	t.Logf("%d /metrics reads with no true server flagged; the combined interval held the truth in all %d /status reads (chronyd residual ≤ %.0f ns)", reads, truthReads, residual)
	if truthReads == 0 {
		t.Fatal("no /status read had a combined interval")
	}
}
