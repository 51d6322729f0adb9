package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/status"
)

// xcheckBed is the agent's own NTP probe polling NTP servers with a known
// truth: chronyd -x each (it never touches the host clock), serving host
// time + K through a SOCK refclock, all in one namespace on ports 12301…,
// the agent in another. The truth of the agent's system clock against each
// is 0 (it is the servers' host clock), against its served time −K.
type xcheckBed struct {
	t        *testing.T
	srv, cli *testbed.Host
	refs     []*testbed.RefclockSock
	servers  []*testbed.Chronyd
	names    []string // the judged sources, ntp:<address>:<port>
	// residual is the most a chronyd's served time strayed from host + K
	// by its own report: the slack the truth is checked with.
	residual  float64
	agentAddr string
	out       string
	hooks     *webhookLog
	http      *http.Client // in the agent's namespace
	agent     *exec.Cmd
	log       bytes.Buffer
	stopped   bool
	// missedOwn counts /status reads left unchecked because a reference
	// in the majority missed the truth by its own bound (holdAgrees).
	missedOwn int
}

// newXcheckBed starts chronyd serving host + ks[i] each and, once they
// serve it, the agent for run.
func newXcheckBed(t *testing.T, run time.Duration, ks ...time.Duration) *xcheckBed {
	return newXcheckBedWith(t, run, nil, ks...)
}

// xcheckMore starts more references of the system clock once the servers
// serve, before the agent starts: it returns YAML under ntp: (indented two
// spaces), top-level YAML, and the judged sources it adds (after the
// servers' in xcheckBed.names).
type xcheckMore func(x *xcheckBed) (ntp, top string, names []string)

// newXcheckBedWith is newXcheckBed with more references (more: nil for
// none).
func newXcheckBedWith(t *testing.T, run time.Duration, more xcheckMore, ks ...time.Duration) *xcheckBed {
	testbed.RequireRoot(t)
	for _, p := range []string{"chronyd", "chronyc"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is not installed (Debian package chrony)", p)
		}
	}
	x := &xcheckBed{t: t, hooks: &webhookLog{}}
	x.srv, x.cli = testbed.NewLink(t)
	x.http = inNS(x.cli)
	for i, k := range ks {
		ref := testbed.NewRefclockSock(t, k)
		port := 12301 + i
		x.servers = append(x.servers, testbed.StartChronyd(t, x.srv, testbed.ChronydRefclockConf(ref.Path)+fmt.Sprintf("port %d\n", port)))
		ref.Start(t, 250*time.Millisecond)
		x.refs, x.names = append(x.refs, ref), append(x.names, fmt.Sprintf("ntp:%s:%d", x.srv.Addr, port))
	}
	for i, k := range ks {
		x.serving(i, k, 40*time.Second)
	}
	hookAddr, agentAddr := hookAndPort(t, x.cli, x.hooks)
	x.agentAddr = agentAddr
	dir := t.TempDir()
	x.out = filepath.Join(dir, "out.lp")
	var list strings.Builder
	for i := range ks {
		fmt.Fprintf(&list, "    - address: %s:%d\n      interval: 1s\n", x.srv.Addr, 12301+i)
	}
	var top string
	if more != nil {
		ntp, t2, names := more(x)
		list.WriteString(ntp)
		top, x.names = t2, append(x.names, names...)
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
%s`, list.String(), x.out, x.agentAddr, hookAddr, top))
	argv := append(append(append([]string{}, prefix...), bin), "run", "--config", cfg, "--duration", run.String())
	x.agent = x.cli.Command(argv[0], argv[1:]...)
	x.agent.Stderr = &x.log
	if err := x.agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		x.stop()
		if t.Failed() {
			t.Logf("agent log:\n%s", x.log.String())
		}
	})
	return x
}

// stop stops the agent (once).
func (x *xcheckBed) stop() {
	if !x.stopped {
		x.stopped = true
		x.agent.Process.Signal(os.Interrupt)
		x.agent.Wait()
	}
}

// serving waits until chronyd i serves host + k.
func (x *xcheckBed) serving(i int, k time.Duration, within time.Duration) {
	x.t.Helper()
	deadline := time.Now().Add(within)
	for {
		name, corr, _, leap, err := tracking(x.servers[i])
		if d := math.Abs(corr*1e9 - float64(k.Nanoseconds())); err == nil && name == "TRUE" && leap == "Normal" && d < 2000 {
			x.residual = max(x.residual, d)
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("chronyd %d does not serve host + %v within %v: %s %g %s %v", i, k, within, name, corr, leap, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// swap makes server i serve host + k from now (a new refclock feed on its
// socket) and returns when it was changed.
func (x *xcheckBed) swap(i int, k time.Duration) time.Time {
	x.refs[i].Stop()
	x.refs[i] = &testbed.RefclockSock{Path: x.refs[i].Path, Offset: k}
	x.refs[i].Start(x.t, 250*time.Millisecond)
	return time.Now()
}

// agrees reads /metrics in the agent's namespace: each server's
// monagent_reference_agrees (-1: absent), and whether the combined bound is
// there.
func (x *xcheckBed) agrees() ([]float64, bool) {
	var body string
	if resp, err := x.http.Get("http://" + x.agentAddr + "/metrics"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
	}
	got := make([]float64, len(x.names))
	for i := range got {
		got[i] = -1
	}
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "monagent_reference_agrees{") {
			continue
		}
		for i, n := range x.names {
			if strings.Contains(l, `source="`+n+`"`) {
				got[i], _ = strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64)
			}
		}
	}
	return got, strings.Contains(body, "monagent_clock_combined_error_bound_seconds{")
}

// status runs `monagent status` (--json: the document) in the agent's
// namespace: its exit code, document and output.
func (x *xcheckBed) status(asJSON bool) (int, status.Doc, string) {
	sargv := append(append(append([]string{}, prefix...), bin), "status", "--url", "http://"+x.agentAddr)
	if asJSON {
		sargv = append(sargv, "--json")
	}
	cmd := x.cli.Command(sargv[0], sargv[1:]...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			x.t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	var d status.Doc
	if asJSON {
		json.Unmarshal(o.Bytes(), &d)
	}
	return code, d, o.String() + e.String()
}

// majorityRight says whether every reference in the majority behind c (a
// LOCKED or HOLDOVER reference of c's clock whose interval, offset ± (bound
// − |offset|), holds c's interval) holds the truth, 0, within slack ns: only
// then must c hold it. A liar whose interval overlaps the truthful ones'
// (a server slewing from +5 ms to the truth) is in the majority, and the
// intersection may then miss the truth: no vote can tell (vote/doc.go).
func majorityRight(d status.Doc, c status.Combined, slack float64) bool {
	lo, hi := c.OffsetNS-c.HalfWidthNS, c.OffsetNS+c.HalfWidthNS
	for _, r := range d.Clocks {
		if r.Clock == c.Clock && r.LastSampleNS > c.VotedNS {
			// A sample the answer does not hold yet (read between the
			// judge's taking it and its vote): the entries and the
			// answer are of two moments; say nothing.
			return false
		}
	}
	for _, r := range d.Clocks {
		if r.Clock != c.Clock || r.State != "LOCKED" && r.State != "HOLDOVER" || r.ErrorBoundNS < 0 {
			continue
		}
		u := r.ErrorBoundNS - judge.Abs(r.OffsetNS)
		if r.OffsetNS-u <= lo && r.OffsetNS+u >= hi && math.Abs(float64(r.OffsetNS)) > float64(u)+slack {
			return false
		}
	}
	return true
}

// namedRecords are the reference_check records' times naming source
// (to=falseticker or disputed), and any naming another source. A record
// from=absent is no new naming: a named reference that went quiet (its
// server restarted) keeps its name when it votes again, until its dwell
// clears it (vote/doc.go).
func namedRecords(lp, source string) (named []int64, others []string) {
	for _, l := range strings.Split(lp, "\n") {
		if !strings.HasPrefix(l, "reference_check,") || !(strings.Contains(l, `to="falseticker"`) || strings.Contains(l, `to="disputed"`)) ||
			strings.Contains(l, `from="absent"`) {
			continue
		}
		at, _ := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
		if strings.Contains(l, "source="+source+",") || strings.Contains(l, "source="+source+" ") {
			named = append(named, at)
		} else {
			others = append(others, l)
		}
	}
	return named, others
}

// TestCrossCheckNTPServersOneLies (issue 35): three servers, two with K = 0,
// one with K = +5 ms (its own judge LOCKED: the threshold is 20 ms, so only
// the vote can catch it). The liar becomes monagent_reference_agrees 0 and
// "agrees": false in `status --json` (FALSETICKER in the table, exit 1); the
// true ones are never flagged; the combined interval contains the truth (0)
// at every /status read. Then the liar tells the truth (K = 0) and is
// trusted again, and lies anew while running (K = −200 µs or more, beyond
// what the measurements resolve: user-space stamps under emulation are
// wider): it is named
// within 3 of its lying polls (the detection latency is logged, in polls and
// seconds). Records and webhooks say the same.
func TestCrossCheckNTPServersOneLies(t *testing.T) {
	x := newXcheckBed(t, 360*time.Second, 0, 0, 5*time.Millisecond)
	const liar = 2
	reads, truthReads := 0, 0
	// until polls /metrics (and /status every fourth read) until the
	// agrees are want, checking at every read that no true server is
	// flagged and the combined interval holds the truth.
	until := func(want []float64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for i := 0; ; i++ {
			got, bound := x.agrees()
			reads++
			if got[0] == 0 || got[1] == 0 {
				t.Fatalf("a true server is flagged: agrees %v", got)
			}
			if i%4 == 0 {
				_, d, _ := x.status(true)
				for _, c := range d.Combined {
					if c.Clock == "system" && c.ErrorBoundNS >= 0 && majorityRight(d, c, x.residual) {
						truthReads++
						// The truth, 0, within [offset − half width, offset + half width].
						if math.Abs(float64(c.OffsetNS)) > float64(c.HalfWidthNS)+x.residual {
							t.Errorf("combined interval %d ± %d ns misses the truth 0 (residual %.0f ns): %+v", c.OffsetNS, c.HalfWidthNS, x.residual, c)
						}
					}
				}
			}
			// The verdicts outlast a vote (they change after a dwell):
			// a vote disputed for a moment, where the intervals are wide
			// (user-space stamps under emulation), shows them with no
			// combined answer. Wait for both.
			if fmt.Sprint(got) == fmt.Sprint(want) && bound {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("agrees %v after %v, want %v; combined error bound on /metrics: %v", got, within, want, bound)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}

	start := time.Now()
	until([]float64{1, 1, 0}, 60*time.Second)
	t.Logf("the +5 ms server is a falseticker %v after the agent started", time.Since(start).Round(time.Millisecond))
	code, d, _ := x.status(true)
	flags := map[string]string{}
	for _, c := range d.Clocks {
		if c.Agrees != nil {
			flags[c.Source] = fmt.Sprint(*c.Agrees)
		}
	}
	if flags[x.names[0]] != "true" || flags[x.names[1]] != "true" || flags[x.names[liar]] != "false" || code != 1 {
		t.Fatalf("status --json: agrees %v, exit %d; want true, true, false and exit 1 (a falseticker named)", flags, code)
	}
	if len(d.Combined) != 1 || d.Combined[0].State != "LOCKED" || d.Combined[0].Agreeing != 2 || fmt.Sprint(d.Combined[0].Falsetickers) != "["+x.names[liar]+"]" {
		t.Fatalf("combined %+v: want LOCKED, 2 agreeing, the liar named", d.Combined)
	}
	_, _, table := x.status(false)
	t.Logf("monagent status:\n%s", table)
	if !strings.Contains(table, "FALSETICKER") {
		t.Fatalf("the table does not mark the falseticker:\n%s", table)
	}

	// The liar tells the truth: trusted again after its dwell. Its chronyd
	// starts afresh on the truth: one that followed its refclock's 5 ms jump
	// may keep a root dispersion near 1 ms for minutes (seen under load),
	// within which a −200 µs lie is no lie.
	x.swap(liar, 0)
	x.servers[liar].Stop()
	x.servers[liar].Start()
	x.serving(liar, 0, 40*time.Second)
	until([]float64{1, 1, 1}, 60*time.Second)
	// A lie of 200 µs is a lie only to a measurement narrower than it:
	// the vote rightly calls a −200 µs offset within the liar's own
	// uncertainty agreeing. Lie once its uncertainty is under 100 µs.
	// A lie is told from the truth only when the liar's interval and the
	// true servers' are disjoint: |lie| beyond the liar's uncertainty plus
	// theirs. With kernel stamps the true servers' are 20–40 µs; the liar's
	// grows to 120–140 µs as its chronyd follows its refclock's jump (root
	// dispersion). With user-space stamps (32-bit ARM under
	// qemu-arm-static, which has no SO_TIMESTAMPING) a true server's
	// reached ~120 µs under the CI's load, and overlapped a 200 µs liar's:
	// the vote could not tell them apart. So the lie is 4 times the widest
	// uncertainty of the true servers over 5 s, plus 150 µs for the liar's
	// own, and at least 200 µs.
	deadline := time.Now().Add(120 * time.Second)
	for narrow := false; !narrow; time.Sleep(500 * time.Millisecond) {
		_, d, _ := x.status(true)
		for _, c := range d.Clocks {
			if c.Source == x.names[liar] && c.State == "LOCKED" && c.ErrorBoundNS-judge.Abs(c.OffsetNS) < 100_000 {
				narrow = true
			}
		}
		if !narrow && time.Now().After(deadline) {
			t.Fatalf("the liar's uncertainty is not under 100 µs 120 s after it told the truth again: %+v", d.Clocks)
		}
	}
	var widest int64
	for range 10 {
		_, d, _ := x.status(true)
		for _, c := range d.Clocks {
			if c.Source != x.names[liar] {
				widest = max(widest, c.ErrorBoundNS-judge.Abs(c.OffsetNS))
			}
		}
		time.Sleep(500 * time.Millisecond)
	}

	// And lies again while running.
	k2 := -max(200*time.Microsecond, (4*time.Duration(widest) + 150*time.Microsecond).Round(10*time.Microsecond))
	t.Logf("the second lie: K = %v (the true servers' widest uncertainty over 5 s %v)", k2, time.Duration(widest))
	changed := x.swap(liar, k2)
	until([]float64{1, 1, 0}, 30*time.Second)
	flagged := time.Now()
	x.serving(liar, k2, 10*time.Second)
	x.stop()

	b, err := os.ReadFile(x.out)
	if err != nil {
		t.Fatal(err)
	}
	lp := string(b)
	named, others := namedRecords(lp, x.names[liar])
	if len(others) > 0 {
		t.Errorf("a true server named: %v", others)
	}
	if len(named) != 2 {
		t.Fatalf("%d falseticker records for the liar, want 2 (+5 ms, then %v)", len(named), k2)
	}
	// The same verdicts went to the webhook, at the records' times.
	evs, _ := x.hooks.ofType(status.ReferenceCheckType)
	var evNamed []int64
	for _, e := range evs {
		if e["to"] == "falseticker" && e["source"] == x.names[liar] && e["from"] != "absent" {
			n, _ := e["time_ns"].(json.Number).Int64()
			evNamed = append(evNamed, n)
		}
	}
	if fmt.Sprint(evNamed) != fmt.Sprint(named) {
		t.Errorf("reference-check events naming the liar at %v, records at %v", evNamed, named)
	}
	// The liar's polls that lied: whose interval, offset ± (bound −
	// |offset|), misses the truth (0: the agent's clock is the host's); a
	// poll while chronyd's root dispersion still held its refclock's jump
	// may cover it and agree rightly.
	var lying []int64
	num := func(r gpioRecord, k string) int64 {
		n, _ := strconv.ParseInt(strings.TrimRight(r.fields[k], "iu"), 10, 64)
		return n
	}
	for _, r := range gpioRecords(t, lp, "ntp_probe") {
		if r.tags["server"] != fmt.Sprintf("%s:%d", x.srv.Addr, 12301+liar) || r.fields["offset_ns"] == "" || r.time <= changed.UnixNano() {
			continue
		}
		o := num(r, "offset_ns")
		u := judge.Exchange(o, num(r, "delay_ns"), num(r, "root_delay_ns"), num(r, "root_dispersion_ns"), num(r, "dispersion_ns")) - judge.Abs(o)
		if r.time <= named[1]+2e9 {
			t.Logf("the liar's poll at %+.3f s from its naming: offset %d ns ± %d ns", float64(r.time-named[1])/1e9, o, u)
		}
		if r.time <= named[1] && judge.Abs(o) > u {
			lying = append(lying, r.time)
		}
	}
	if len(lying) == 0 || len(lying) > 3 {
		t.Fatalf("the %v liar was named after %d polls whose interval missed the truth, want 1 to 3", k2, len(lying))
	}
	t.Logf("K %v: named at its lying poll %d (interval missing the truth), %v after the first, %v after K changed (chronyd follows its refclock within a few polls); %v until /metrics said so",
		k2, len(lying), time.Duration(named[1]-lying[0]).Round(time.Millisecond), time.Duration(named[1]-changed.UnixNano()).Round(time.Millisecond),
		flagged.Sub(changed).Round(time.Millisecond))
	t.Logf("%d /metrics reads with no true server flagged; the combined interval held the truth in all %d /status reads (chronyd residual ≤ %.0f ns)", reads, truthReads, x.residual)
	if truthReads == 0 {
		t.Fatal("no /status read had a combined interval")
	}
}

// TestCrossCheckTwoNTPServersDisputed: two servers, one lying by +5 ms: no
// majority, so the clock is disputed: both are named (agrees 0), the
// combined state is FREERUN with no bound, `monagent status` exits 1.
func TestCrossCheckTwoNTPServersDisputed(t *testing.T) {
	x := newXcheckBed(t, 120*time.Second, 0, 5*time.Millisecond)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, _ := x.agrees()
		if fmt.Sprint(got) == "[0 0]" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agrees %v after 60 s, want both 0 (disputed)", got)
		}
		time.Sleep(250 * time.Millisecond)
	}
	code, d, _ := x.status(true)
	if len(d.Combined) != 1 || d.Combined[0].Vote != "disputed" || d.Combined[0].State == "LOCKED" || d.Combined[0].ErrorBoundNS != -1 ||
		len(d.Combined[0].Falsetickers) != 2 || code != 1 {
		t.Fatalf("combined %+v, exit %d: want disputed, not LOCKED, no bound, both named, exit 1", d.Combined, code)
	}
	_, _, table := x.status(false)
	t.Logf("monagent status:\n%s", table)
	if strings.Count(table, "DISPUTED") != 2 {
		t.Fatalf("the table does not mark both references DISPUTED:\n%s", table)
	}
}

// TestCrossCheckSoak: three true servers for MONAGENT_XCHECK_SOAK (a
// duration, e.g. 10m; skipped without it: it is a figure for
// docs/performance.md, not a check of each run): no reference is ever
// flagged, in /metrics read every second or in the records, and the combined
// interval holds the truth at every /status read.
func TestCrossCheckSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("MONAGENT_XCHECK_SOAK"))
	if err != nil || d <= 0 {
		t.Skip("set MONAGENT_XCHECK_SOAK (e.g. 10m) for the soak")
	}
	x := newXcheckBed(t, d+2*time.Minute, 0, 0, 0)
	deadline := time.Now().Add(60 * time.Second)
	for got, _ := x.agrees(); fmt.Sprint(got) != "[1 1 1]"; got, _ = x.agrees() {
		if time.Now().After(deadline) {
			t.Fatalf("agrees %v after 60 s, want all 1", got)
		}
		time.Sleep(250 * time.Millisecond)
	}
	reads, flagged, truth, missed := 0, 0, 0, 0
	var maxHalf, maxBound int64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Second) {
		got, _ := x.agrees()
		reads++
		if fmt.Sprint(got) != "[1 1 1]" {
			flagged++
			t.Errorf("agrees %v at read %d", got, reads)
		}
		_, doc, _ := x.status(true)
		for _, c := range doc.Combined {
			if c.ErrorBoundNS < 0 || !majorityRight(doc, c, x.residual) {
				continue
			}
			truth++
			maxHalf, maxBound = max(maxHalf, c.HalfWidthNS), max(maxBound, c.ErrorBoundNS)
			if math.Abs(float64(c.OffsetNS)) > float64(c.HalfWidthNS)+x.residual {
				missed++
				t.Errorf("combined interval %d ± %d ns misses the truth 0", c.OffsetNS, c.HalfWidthNS)
			}
		}
	}
	x.stop()
	b, _ := os.ReadFile(x.out)
	var named []string
	for _, n := range x.names {
		ts, _ := namedRecords(string(b), n)
		for range ts {
			named = append(named, n)
		}
	}
	if len(named) > 0 {
		t.Errorf("records name %v", named)
	}
	t.Logf("soak %v, three true servers: %d /metrics reads, %d with a flag, %d records naming a reference; the combined interval held the truth in %d of %d /status reads (half width ≤ %d ns, bound ≤ %d ns)",
		d, reads, flagged, len(named), truth-missed, truth, maxHalf, maxBound)
}
