package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/judge"
)

// TestJudgeBoundCoversAKnownOffset (issue 23: "where truth is known, the
// bound must cover the true error in ≥ 99 % of samples"): the own NTP probe
// measures the system clock against a chronyd whose time is the host's
// shifted by a known K. chronyd -x (it never touches the host clock) follows
// a SOCK refclock that says, four times a second, "the true time is the
// system time + K"; its null clock driver applies the correction to its own
// time at once, so it serves host time + K (chronyc tracking's System time,
// sampled through the run, shows how closely). The probing side's system
// clock is the same host clock, so its true offset against the server's
// reference, local − server (ntp_probe's sign), is exactly −K.
//
// For every polled sample the bound (judge.Exchange of the ntp_probe
// record's fields, as the agent computes it; the clock_state records that
// carry that sample agree) must be ≥ |−K|, and the truth must lie within
// the interval the bound stands for, |measured − truth| ≤ bound − |measured|.
// With K within the threshold the clock is LOCKED; with K beyond it the
// judge must see the offset and never lock (FREERUN, offset beyond threshold;
// bound over threshold when the first sample's delay hides it, as under
// qemu-arm-static's user-space stamps).
func TestJudgeBoundCoversAKnownOffset(t *testing.T) {
	testbed.RequireRoot(t)
	if _, err := exec.LookPath("chronyd"); err != nil {
		t.Skip("chronyd is not installed (Debian package chrony)")
	}
	if _, err := exec.LookPath("chronyc"); err != nil {
		t.Skip("chronyc is not installed (Debian package chrony)")
	}
	for _, c := range []struct {
		name      string
		k         time.Duration
		threshold string
		run       time.Duration // the agent's --duration: about one sample a second
		want      string
	}{
		{"ahead_3ms", 3 * time.Millisecond, "20ms", 40 * time.Second, "LOCKED"},
		{"behind_7.5ms", -7500 * time.Microsecond, "20ms", 40 * time.Second, "LOCKED"},
		{"ahead_3ms_over_1ms", 3 * time.Millisecond, "1ms", 15 * time.Second, "FREERUN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			truthRun(t, c.k, c.threshold, c.run, c.want)
		})
	}
}

// tracking is chronyc -c tracking: the selected reference's name, the host
// clock's offset from chronyd's time (System time, s; positive: the host is
// slow, chronyd serves host + it), its root dispersion (s) and leap status.
func tracking(c *testbed.Chronyd) (ref string, corr, rootDisp float64, leap string, err error) {
	out, err := c.Chronyc("-c", "tracking")
	if err != nil {
		return "", 0, 0, "", fmt.Errorf("%v: %s", err, out)
	}
	f := strings.Split(strings.TrimSpace(out), ",")
	if len(f) < 14 {
		return "", 0, 0, "", fmt.Errorf("tracking: %q", out)
	}
	corr, err1 := strconv.ParseFloat(f[4], 64)
	rootDisp, err2 := strconv.ParseFloat(f[11], 64)
	if err1 != nil || err2 != nil {
		return "", 0, 0, "", fmt.Errorf("tracking: %q", out)
	}
	return f[1], corr, rootDisp, f[13], nil
}

func truthRun(t *testing.T, k time.Duration, threshold string, run time.Duration, want string) {
	start := time.Now()
	srv, cli := testbed.NewLink(t)
	ref := testbed.NewRefclockSock(t, k)
	server := testbed.StartChronyd(t, srv, testbed.ChronydRefclockConf(ref.Path))
	ref.Start(t, 250*time.Millisecond)

	// chronyd selects the refclock after a few of its 1 s polls; from then
	// it serves host + K.
	kNS := float64(k.Nanoseconds())
	deadline := time.Now().Add(20 * time.Second)
	for {
		name, corr, _, leap, err := tracking(server)
		if err == nil && name == "TRUE" && leap == "Normal" && math.Abs(corr*1e9-kNS) < 1000 {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(server.Dir, "chronyd.log"))
			t.Fatalf("chronyd did not take the refclock's %v within 20 s: %s %g %s %v\n%s", k, name, corr, leap, err, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	synced := time.Since(start)

	dir := t.TempDir()
	out := filepath.Join(dir, "out.lp")
	cfg := writeConfig(t, dir, fmt.Sprintf(`
clock: {enabled: false}
phc: {enabled: false}
ntp:
  enabled: true
  timeout: 500ms
  judge: {threshold: %s, min_samples: 4}
  servers:
    - address: %s
      interval: 1s
output: {file: %s}
spool: {enabled: false}
self_metrics: {interval: 1s}
`, threshold, srv.Addr, out))
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", run.String(), "--http", "127.0.0.1:0")
	agent := cli.Command(argv[0], argv[1:]...)
	var agentLog bytes.Buffer
	agent.Stdout, agent.Stderr = &agentLog, &agentLog
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- agent.Wait() }()

	// chronyd's residual while the agent runs: how far its served time is
	// from host + K, and its root dispersion.
	var residual, maxRootDisp float64
	polls := 0
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var err error
wait:
	for {
		select {
		case err = <-exited:
			break wait
		case <-time.After(run + 15*time.Second):
			agent.Process.Kill()
			<-exited
			t.Fatalf("the agent did not stop within %v of its --duration\n%s", 15*time.Second, agentLog.String())
		case <-tick.C:
			name, corr, rd, leap, terr := tracking(server)
			if terr != nil || name != "TRUE" || leap != "Normal" {
				t.Errorf("chronyd left its refclock: %s %s %v", name, leap, terr)
				continue
			}
			polls++
			residual = max(residual, math.Abs(corr*1e9-kNS))
			maxRootDisp = max(maxRootDisp, rd*1e9)
		}
	}
	if err != nil {
		t.Fatalf("agent: %v\n%s", err, agentLog.String())
	}
	defer func() {
		if t.Failed() {
			t.Logf("agent log:\n%s", agentLog.String())
		}
	}()
	lp, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatal(rerr)
	}

	truth := -kNS // local − server, ntp_probe's and the judge's sign
	// u: how far chronyd's served time strayed from host + K by its own
	// report; a sample counts as covered only when it is covered with u to
	// spare (the reference itself is exactly host + K).
	u := residual
	type sample struct{ t, offset, delay, rootDisp, disp, bound int64 }
	var samples []sample
	failed := 0
	ivalue := func(r gpioRecord, k string) int64 {
		v, ok := r.fields[k]
		if !ok {
			t.Fatalf("ntp_probe at %d has no %s: %v", r.time, k, r.fields)
		}
		n, err := strconv.ParseInt(strings.TrimRight(v, "iu"), 10, 64)
		if err != nil {
			t.Fatalf("ntp_probe %s=%s: %v", k, v, err)
		}
		return n
	}
	for _, r := range gpioRecords(t, string(lp), "ntp_probe") {
		if _, ok := r.fields["offset_ns"]; !ok {
			failed++
			continue
		}
		if st, lv := ivalue(r, "stratum"), ivalue(r, "leap"); st != 1 || lv != 0 {
			t.Errorf("ntp_probe at %d: stratum %d leap %d, want chronyd synchronised to its refclock (1, 0)", r.time, st, lv)
		}
		s := sample{t: r.time, offset: ivalue(r, "offset_ns"), delay: ivalue(r, "delay_ns"),
			rootDisp: ivalue(r, "root_dispersion_ns"), disp: ivalue(r, "dispersion_ns")}
		s.bound = judge.Exchange(s.offset, s.delay, ivalue(r, "root_delay_ns"), s.rootDisp, s.disp)
		samples = append(samples, s)
	}
	minSamples := int(run/time.Second) * 3 / 4
	if len(samples) < minSamples {
		t.Fatalf("%d samples (%d polls failed) in %v, want at least %d", len(samples), failed, run, minSamples)
	}

	covered, inside, tight := 0, 0, 0
	var sumErr, maxErr, sumSlack, sumDelay, sumRootDisp, sumDisp float64
	minSlack := math.Inf(1)
	for _, s := range samples {
		e := math.Abs(float64(s.offset) - truth) // |measured − truth|
		slack := float64(s.bound - judge.Abs(s.offset))
		if float64(s.bound) >= math.Abs(truth)+u {
			covered++
		} else {
			t.Logf("not covered: sample at %d offset %d ns bound %d ns, |truth| %.0f ns (+ %.0f)", s.t, s.offset, s.bound, math.Abs(truth), u)
		}
		if e+u <= slack {
			inside++
		} else {
			t.Logf("truth outside offset ± slack: sample at %d offset %d ns slack %.0f ns, |measured − truth| %.0f ns (+ %.0f)", s.t, s.offset, slack, e, u)
		}
		// The exchange's own term alone (RFC 5905 §8, θ within δ/2, and the
		// stamps' dispersion), without the server's root distance: the
		// served root dispersion is at least 2^-16 s (NTP's short format),
		// which alone exceeds the errors seen here.
		if e <= float64(s.delay/2+s.delay%2+s.disp) {
			tight++
		}
		sumErr += e
		maxErr = max(maxErr, e)
		sumSlack += slack
		minSlack = min(minSlack, slack)
		sumDelay += float64(s.delay)
		sumRootDisp += float64(s.rootDisp)
		sumDisp += float64(s.disp)
	}
	n := float64(len(samples))
	t.Logf("K %v (truth %.0f ns), threshold %s: %d samples, %d failed polls; chronyd took the refclock %v after the case began, residual ≤ %.0f ns over %d tracking reads, root dispersion ≤ %.0f ns",
		k, truth, threshold, len(samples), failed, synced.Round(time.Millisecond), residual, polls, maxRootDisp)
	t.Logf("coverage bound ≥ |truth|: %d/%d = %.1f %%; truth within offset ± (bound − |offset|): %d/%d = %.1f %%",
		covered, len(samples), 100*float64(covered)/n, inside, len(samples), 100*float64(inside)/n)
	t.Logf("truth within offset ± (⌈½ delay⌉ + the sample's dispersion), without the root distance: %d/%d", tight, len(samples))
	t.Logf("|measured − truth| mean %.0f ns max %.0f ns; slack bound − |offset| mean %.0f ns min %.0f ns (means: ½ delay %.0f, server root dispersion %.0f, the sample's dispersion %.0f)",
		sumErr/n, maxErr, sumSlack/n, minSlack, sumDelay/n/2, sumRootDisp/n, sumDisp/n)
	if float64(covered) < 0.99*n {
		t.Errorf("the bound covers the true offset in %d of %d samples, want ≥ 99 %%", covered, len(samples))
	}
	if float64(inside) < 0.99*n {
		t.Errorf("the true offset lies within offset ± (bound − |offset|) in %d of %d samples, want ≥ 99 %%", inside, len(samples))
	}

	// clock_state: the judge's own bound, every second.
	bySample := map[int64]int64{}
	for _, s := range samples {
		bySample[s.t] = s.bound
	}
	var states []gpioRecord
	csCovered, csJudged, csMatched := 0, 0, 0
	for _, r := range gpioRecords(t, string(lp), "clock_state") {
		if r.tags["clock"] != "system" || r.tags["source"] != "ntp:"+srv.Addr.String()+":123" {
			t.Fatalf("clock_state of %v", r.tags)
		}
		states = append(states, r)
		if r.fields["state"] == `"UNKNOWN"` {
			continue
		}
		bound, _ := strconv.ParseInt(strings.TrimRight(r.fields["bound_ns"], "iu"), 10, 64)
		last, _ := strconv.ParseInt(strings.TrimRight(r.fields["last_sample_ns"], "iu"), 10, 64)
		csJudged++
		if float64(bound) >= math.Abs(truth)+u {
			csCovered++
		}
		// LOCKED, the bound is its sample's; in HOLDOVER (and a FREERUN
		// that ended one) it is predicted from the last good sample, where
		// a sample that could not confirm the clock (a delayed exchange
		// under emulation: 37 ms ± 40 ms against 20 ms) left it.
		if b, ok := bySample[last]; ok && r.fields["state"] == `"LOCKED"` {
			csMatched++
			if b != bound {
				t.Errorf("clock_state at %d: bound %d ns, its sample's (at %d) is %d ns", r.time, bound, last, b)
			}
		}
	}
	if csJudged == 0 || float64(csCovered) < 0.99*float64(csJudged) {
		t.Errorf("clock_state: the bound covers the true offset in %d of %d records, want ≥ 99 %%", csCovered, csJudged)
	}
	t.Logf("clock_state: %d records after the first sample, bound ≥ |truth| in %d; %d LOCKED carry a sample of ntp_probe and agree with its bound", csJudged, csCovered, csMatched)

	// The judged state.
	var trans []string
	for _, l := range strings.Split(string(lp), "\n") {
		if strings.HasPrefix(l, "sync_state,") {
			trans = append(trans, l)
		}
	}
	if len(states) == 0 {
		t.Fatalf("no clock_state records")
	}
	if last := states[len(states)-1]; last.fields["state"] != `"`+want+`"` {
		t.Errorf("last clock_state %v, want %s", last.fields, want)
	}
	switch want {
	case "LOCKED":
		if len(trans) != 1 || !strings.Contains(trans[0], `to="LOCKED"`) {
			t.Errorf("sync_state records %q, want one, to LOCKED", trans)
		}
	default:
		// Offset beyond threshold, or — when the first sample's delay was so
		// wide (user-space stamps under qemu-arm-static) that even it could
		// not show the clock off — bound over threshold: FREERUN either way,
		// never LOCKED.
		if len(trans) != 1 || !strings.Contains(trans[0], `to="FREERUN"`) ||
			!strings.Contains(trans[0], `reason="offset beyond threshold"`) && !strings.Contains(trans[0], `reason="bound over threshold"`) {
			t.Errorf("sync_state records %q, want one, to FREERUN (offset beyond threshold, or bound over it)", trans)
		}
	}
	t.Logf("state %s (%d transitions: %q); run took %v", want, len(trans), trans, time.Since(start).Round(time.Millisecond))
}
