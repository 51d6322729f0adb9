package agent

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// runAgentOnGpsd runs an agent with only the gpsd source, at addr, judged
// on TOFF (threshold 30 s: gpsfake's log times are only near the host's
// clock) after minSamples, for at most limit; wg ends with it.
func runAgentOnGpsd(t *testing.T, addr string, minSamples int, limit time.Duration) (*memSink, context.Context, context.CancelFunc, *sync.WaitGroup) {
	t.Helper()
	cfg := Default()
	cfg.Host, cfg.HTTP.Listen = "gnss", ""
	cfg.Clock.Enabled, cfg.PHC.Enabled, cfg.Sensors.Enabled = false, false, false
	cfg.SelfMetrics.Interval = 500 * time.Millisecond
	cfg.GNSS.Enabled, cfg.GNSS.Address, cfg.GNSS.Interval = true, addr, 200*time.Millisecond
	cfg.GNSS.Reference, cfg.GNSS.Judge.Threshold, cfg.GNSS.Judge.MinSamples = "toff", 30*time.Second, minSamples
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	out := &memSink{}
	a, err := newAgent(cfg, quietLog(), out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := a.Run(ctx); err != nil {
			t.Error(err)
		}
	})
	return out, ctx, cancel, &wg
}

// TestGNSSSourceAgainstGpsd runs the agent against Debian's gpsd fed by
// gpsfake from an NMEA log (one epoch without a fix, then a 3D fix from 8
// of 10 satellites, ~1 s an epoch). gpsfake's pty has no PPS line, so gpsd
// sends TOFF but no PPS, and the judge takes TOFF (gnss.reference: toff;
// the log's times are only near the host's clock, and gpsfake feeds an
// epoch every 1 to 1.5 s, so the offsets grow: threshold 30 s). It
// checks the gnss records (tpv mode 3, sky 10/8, toff at clock_ns with
// offset_ns = clock − real), that the system clock becomes LOCKED, and
// that once the feed stops (gpsfake exits a second after the log) the
// clock leaves LOCKED at the last TOFF + 3 s (to HOLDOVER, or FREERUN when
// the drift the offsets showed already predicts a bound over the
// threshold); every record keeps the rules.
func TestGNSSSourceAgainstGpsd(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	g := testbed.StartGpsfake(t, testbed.NMEAFix(start, 9, 1), time.Second/6)
	out, ctx, cancel, wg := runAgentOnGpsd(t, g.Addr, 2, 45*time.Second)
	defer cancel()
	// Until gpsfake has exited and, past the 3 s without a TOFF that end
	// LOCKED and a second more, the clock is out of LOCKED. Beside other
	// work gpsfake itself can pause for over 3 s within the log (seen: 4 s
	// and 5 s between two TOFFs; gpsfake: "Test timed out"): the clock then
	// leaves LOCKED rightly, and may come back with the next TOFFs or, its
	// offsets grown, go on to FREERUN. So each exit is checked against the
	// TOFF before it (below), which also tells an exit while TOFFs came;
	// this used to fail the test as "left LOCKED while gpsfake still ran".
	var exited time.Time
	settled := func() bool {
		if exited.IsZero() {
			select {
			case <-g.Exited():
				exited = time.Now()
			default:
				return false
			}
		}
		if time.Since(exited) < gnssStale+time.Second {
			return false
		}
		out.mu.Lock()
		defer out.mu.Unlock()
		state := ""
		for _, r := range out.recs {
			if to, _ := r.Field("to"); r.Measurement == "sync_state" {
				state = to.S
			}
		}
		return state != "" && state != "LOCKED"
	}
	for !settled() && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
	}
	if ctx.Err() != nil {
		t.Error("gpsfake still ran, or the clock was still LOCKED after it, 45 s on")
	}
	time.Sleep(time.Second) // a self-metrics record after it
	cancel()
	wg.Wait()
	out.mu.Lock()
	defer out.mu.Unlock()
	per := checkRecordRules(t, out.recs)
	t.Logf("%d records: %v", len(out.recs), per)
	var mode3, sky, toffs int
	var toffTimes []int64
	var trs []record.Record
	var self record.Record
	for _, r := range out.recs {
		switch {
		case r.Measurement == "sync_state":
			trs = append(trs, r)
		case r.Measurement == "monagent_source" && tagOf(r, "source") == "gnss:"+g.Addr:
			self = r
		case r.Measurement != "gnss":
		case tagOf(r, "class") == "tpv":
			if m, _ := fieldInt(r, "mode"); m == 3 {
				mode3++
			}
		case tagOf(r, "class") == "sky":
			seen, _ := fieldInt(r, "satellites_seen")
			used, _ := fieldInt(r, "satellites_used")
			if seen == testbed.NMEASeen && used == testbed.NMEAUsed {
				sky++
			}
		case tagOf(r, "class") == "toff":
			toffs++
			clock, _ := fieldInt(r, "clock_ns")
			real, _ := fieldInt(r, "real_ns")
			off, _ := fieldInt(r, "offset_ns")
			if r.TimeNS != clock || off != clock-real || judge.Abs(off) > 20e9 || real%1e9 != 0 || real < start.UnixNano() {
				t.Errorf("toff at %d: clock %d real %d offset %d", r.TimeNS, clock, real, off)
			}
			toffTimes = append(toffTimes, r.TimeNS)
			t.Logf("toff %s at %d: offset %d ns", tagOf(r, "device"), r.TimeNS, off)
		}
	}
	if mode3 < 3 || sky < 3 || toffs < 3 {
		t.Errorf("%d tpv records with mode 3, %d sky with 10 seen and 8 used, %d toff: want 3 or more each", mode3, sky, toffs)
	}
	var states []string
	for _, r := range trs {
		from, _ := r.Field("from")
		to, _ := r.Field("to")
		reason, _ := r.Field("reason")
		states = append(states, from.S+"->"+to.S)
		stale := reason.S == string(judge.ReasonStale) || reason.S == string(judge.ReasonPredicted)
		var before int64 // the last TOFF before the transition
		for _, at := range toffTimes {
			if at < r.TimeNS {
				before = max(before, at)
			}
		}
		if from.S == "LOCKED" && (!stale || r.TimeNS != before+int64(gnssStale)) {
			t.Errorf("left LOCKED at %d for %q; want no fresh sample (or a predicted bound over) at the TOFF before it, %d, + 3 s", r.TimeNS, reason.S, before)
		}
	}
	if len(states) < 2 || states[0] != "UNKNOWN->LOCKED" {
		t.Errorf("transitions %v: want UNKNOWN->LOCKED, then out of LOCKED", states)
	}
	t.Logf("transitions %v; self-metrics %v", states, self.Fields)
	if n, _ := fieldInt(self, "garbage_lines"); n != 0 {
		t.Errorf("garbage_lines %d", n)
	}
	if n, _ := fieldInt(self, "connections"); n != 1 {
		t.Errorf("connections %d, want 1 (gpsd is gone after the feed)", n)
	}
	if t.Failed() {
		t.Log(g.Output())
	}
}

// TestGNSSReceiversJudgedApartAgainstGpsd runs the agent against gpsd fed
// by gpsfake from two receivers at once, one with a 3D fix and one with a
// 2D fix, both sending a TOFF each epoch (reference toff, min_samples 4).
// Each is judged as a reference of its own: the 3D receiver's clock
// (source gnss:<address>:<its pty>) becomes LOCKED, the 2D one's never.
// Judged as one reference (main before the fix), the 2D receiver's TOFF
// between each two of the 3D one's reset the count: never LOCKED.
func TestGNSSReceiversJudgedApartAgainstGpsd(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second).Add(time.Second)
	const epochs = 15
	g := testbed.StartGpsfakeLogs(t, time.Second/6, testbed.NMEAFix(start, epochs, 0), testbed.NMEA2D(testbed.NMEAFix(start, epochs, 0)))
	out, ctx, cancel, wg := runAgentOnGpsd(t, g.Addr, 4, 60*time.Second)
	defer cancel()
	select {
	case <-g.Exited():
	case <-ctx.Done():
		t.Error("gpsfake still ran 60 s on")
	}
	time.Sleep(time.Second) // the last messages collected
	cancel()
	wg.Wait()
	out.mu.Lock()
	defer out.mu.Unlock()
	checkRecordRules(t, out.recs)
	modes := map[string][4]int{} // per device, TPVs by mode
	locked := map[string]int{}
	toffs := map[string]int{}
	for _, r := range out.recs {
		dev := tagOf(r, "device")
		switch {
		case r.Measurement == "sync_state":
			if to, _ := r.Field("to"); to.S == "LOCKED" {
				locked[tagOf(r, "source")]++
			}
		case r.Measurement == "gnss" && tagOf(r, "class") == "tpv":
			if m, _ := fieldInt(r, "mode"); m >= 0 && m <= 3 {
				n := modes[dev]
				n[m]++
				modes[dev] = n
			}
		case r.Measurement == "gnss" && tagOf(r, "class") == "toff":
			toffs[dev]++
		}
	}
	t.Logf("TPVs by mode %v, TOFFs %v, LOCKED by source %v", modes, toffs, locked)
	var fix3, fix2 string
	for dev, n := range modes {
		switch {
		case n[3] > n[2]:
			fix3 = dev
		case n[2] > n[3]:
			fix2 = dev
		}
	}
	if fix3 == "" || fix2 == "" || toffs[fix3] < 4 || toffs[fix2] < 4 {
		t.Fatalf("want a receiver with a 3D fix and one with a 2D fix, each with 4 TOFFs or more; got TPVs %v, TOFFs %v\n%s", modes, toffs, g.Output())
	}
	good, bad := "gnss:"+g.Addr+":"+fix3, "gnss:"+g.Addr+":"+fix2
	if locked[good] < 1 || locked[bad] != 0 || len(locked) != 1 {
		t.Errorf("LOCKED transitions by source %v; want %s LOCKED, %s never", locked, good, bad)
	}
}
