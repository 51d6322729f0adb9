package ptp

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/timebase"
)

// captureGolden writes b as hex to testdata/name when MONAGENT_CAPTURE is set
// (how the golden vectors were taken from the real ptp4l).
func captureGolden(t *testing.T, name string, b []byte) {
	if os.Getenv("MONAGENT_CAPTURE") == "" {
		return
	}
	if err := os.WriteFile(filepath.Join("testdata", name), []byte(hex.EncodeToString(b)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testbedContext is a context the test cancels, at the latest when it ends.
func testbedContext(t *testing.T) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, cancel
}

// ptp4lLogLine finds the first line of ptp4l's log (-m) after the
// monotonic time from (ns) that contains what, and returns its stamp:
// ptp4l prints CLOCK_MONOTONIC as "ptp4l[s.mmm]:".
var ptp4lStamp = regexp.MustCompile(`^ptp4l\[(\d+)\.(\d{3})\]: (.*)$`)

func ptp4lLogLine(log string, from int64, what string) (int64, string, bool) {
	for _, l := range strings.Split(log, "\n") {
		m := ptp4lStamp.FindStringSubmatch(l)
		if m == nil || !strings.Contains(m[3], what) {
			continue
		}
		s, _ := strconv.ParseInt(m[1], 10, 64)
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		if ns := s*1e9 + ms*1e6; ns >= from-int64(time.Millisecond) {
			return ns, l, true
		}
	}
	return 0, "", false
}

// following: the port follows a master (ptp4l with free_running stays
// UNCALIBRATED: its servo never locks).
func following(s protocol.PortState) bool {
	return s == protocol.PortStateSlave || s == protocol.PortStateUncalibrated
}

// TestSubscribePushesPortStateAgainstPtp4l: a subscriber to a free-running
// ptp4l slave (linuxptp as installed) is told of every port state change as
// ptp4l makes it: three times the master is started and stopped, and each
// time the slave's change (to UNCALIBRATED, then away from it at the
// announce receipt timeout) arrives by push within milliseconds of ptp4l's
// own log line, while a 1 s poll of PORT_DATA_SET (the ptp4l source's
// default interval) sees it up to a second later. The latencies are
// measured on CLOCK_MONOTONIC, ptp4l's log clock.
func TestSubscribePushesPortStateAgainstPtp4l(t *testing.T) {
	hosts := testbed.NewBridge(t, 2)
	slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{})
	sub := NewSubscriber(slave.Socket, SubscribeConfig{Duration: 8 * time.Second})
	type seen struct {
		state protocol.PortState
		mono  int64
		n     Notification
	}
	var mu sync.Mutex
	var pushed []seen
	baseline := make(chan struct{}, 1)
	captured := false
	ctx, cancel := testbedContext(t)
	done := make(chan error, 1)
	go func() {
		done <- sub.Run(ctx, func(n *Notification) {
			mono, _ := timebase.Monotonic.Now()
			if n.ID != protocol.IDPortDataSet {
				return
			}
			if n.Baseline {
				select {
				case baseline <- struct{}{}:
				default:
				}
				return
			}
			mu.Lock()
			pushed = append(pushed, seen{n.Port.PortState, mono, *n})
			mu.Unlock()
			if !captured {
				captured = true
				captureGolden(t, "port_state_notification_ptp4l311.hex", sub.buf[:sub.lastN])
			}
		})
	}()
	select {
	case <-baseline:
	case err := <-done:
		t.Fatalf("subscription ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no PORT_DATA_SET baseline within 10 s")
	}
	// A poller at 1 s, as the ptp4l source.
	mon := NewMonitor(slave.Socket, 0, time.Second)
	defer mon.Close()
	var polled []seen
	pollStop := make(chan struct{})
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		last := protocol.PortState(0)
		for {
			select {
			case <-pollStop:
				return
			case <-tick.C:
			}
			pd, err := mon.PortDataSet(ctx)
			mono, _ := timebase.Monotonic.Now()
			if err == nil && pd.PortState != last {
				last = pd.PortState
				mu.Lock()
				polled = append(polled, seen{state: pd.PortState, mono: mono})
				mu.Unlock()
			}
		}
	}()

	type change struct{ push, poll time.Duration }
	var changes []change
	measure := func(from int64, want func(protocol.PortState) bool, logWhat string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var p seen
		for {
			mu.Lock()
			for _, s := range pushed {
				if s.mono >= from && want(s.state) {
					p = s
					break
				}
			}
			mu.Unlock()
			if p.mono != 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if p.mono == 0 {
			t.Fatalf("no pushed port state change (%s) within 20 s\n%s", logWhat, slave.LogText())
		}
		logNS, line, ok := ptp4lLogLine(slave.LogText(), from, logWhat)
		if !ok {
			t.Fatalf("ptp4l logged no %q\n%s", logWhat, slave.LogText())
		}
		// The poll: wait until it saw it too (up to a poll interval on).
		var q seen
		for deadline := time.Now().Add(3 * time.Second); q.mono == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			for _, s := range polled {
				if s.mono >= from && want(s.state) {
					q = s
					break
				}
			}
			mu.Unlock()
		}
		push := time.Duration(p.mono - logNS)
		// ptp4l prints whole ms: the stamp is up to 1 ms early.
		if push < 0 || push > 100*time.Millisecond {
			t.Errorf("pushed %v after ptp4l's line %q, want within 100 ms", push, line)
		}
		c := change{push: push, poll: -1}
		if q.mono != 0 {
			c.poll = time.Duration(q.mono - logNS)
		} else {
			t.Errorf("the 1 s poll did not see %s within 3 s", logWhat)
		}
		t.Logf("%-40s push %8v  poll(1 s) %8v  (seq %d)", line[strings.Index(line, "port"):], push.Round(10*time.Microsecond), c.poll.Round(time.Millisecond), p.n.Seq)
		changes = append(changes, c)
	}
	for range 3 {
		start, _ := timebase.Monotonic.Now()
		master := testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
		measure(start, following, "to UNCALIBRATED")
		stopped, _ := timebase.Monotonic.Now()
		master.Stop()
		measure(stopped, func(s protocol.PortState) bool { return !following(s) }, "on ANNOUNCE_RECEIPT_TIMEOUT_EXPIRES")
	}
	close(pollStop)
	<-pollDone
	var sumPush, sumPoll, maxPush, maxPoll time.Duration
	for _, c := range changes {
		sumPush += c.push
		sumPoll += c.poll
		maxPush, maxPoll = max(maxPush, c.push), max(maxPoll, c.poll)
	}
	n := time.Duration(len(changes))
	t.Logf("%d changes: push mean %v max %v; 1 s poll mean %v max %v", len(changes), (sumPush / n).Round(10*time.Microsecond), maxPush.Round(10*time.Microsecond), (sumPoll / n).Round(time.Millisecond), maxPoll.Round(time.Millisecond))
	if sumPush >= sumPoll {
		t.Errorf("push (%v) no sooner than polling (%v)", sumPush/n, sumPoll/n)
	}
	// Renewed every 4 s over the run (Duration 8 s, so that a renewal late
	// by up to 4 s on a loaded machine is still in time): ptp4l never
	// dropped us.
	if got := sub.Subscriptions.Load(); got < 3 {
		t.Errorf("%d acknowledged subscriptions, want the first and renewals", got)
	}
	if sub.Lost.Load() != 0 || sub.Undecodable.Load() != 0 {
		t.Errorf("lost %d, undecodable %d", sub.Lost.Load(), sub.Undecodable.Load())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sub.LocalSocket()); !os.IsNotExist(err) {
		t.Errorf("the subscriber's socket is left behind: %v", err)
	}
	if strings.Contains(slave.LogText(), "timed out") {
		t.Errorf("ptp4l timed the subscriber out:\n%s", slave.LogText())
	}
}

// TestSlaveEventMonitorMatchesPtp4lOffsets: a free-running ptp4l slave
// with slave_event_monitor set sends monagent every Sync's and every
// Delay_Req's timestamps; the offsets computed from them as ptp4l computes
// them equal, Sync by Sync, the "master offset" and "path delay" ptp4l
// prints (freq_est_interval 0: a line for every Sync).
func TestSlaveEventMonitorMatchesPtp4lOffsets(t *testing.T) {
	hosts := testbed.NewBridge(t, 2)
	path := filepath.Join(t.TempDir(), "events")
	l, err := ListenSlaveEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
	slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{Extra: fmt.Sprintf("slave_event_monitor %s\nfreq_est_interval 0\n", path)})
	type out struct {
		rec           SlaveTiming
		offset, delay int64
		ok            bool
		raw, filtered int64
	}
	var mu sync.Mutex
	var got []out
	o := NewOffsets(DefaultDelayFilterLength)
	var capturedSync, capturedDelay bool
	ctx, cancel := testbedContext(t)
	done := make(chan error, 1)
	go func() {
		done <- l.Run(ctx, func(recs []SlaveTiming, read int64) {
			for i := range recs {
				r := out{rec: recs[i]}
				switch recs[i].Kind {
				case SlaveSync:
					r.offset, r.delay, r.ok = o.Sync(&recs[i])
					if !capturedSync {
						capturedSync = true
						captureGolden(t, "slave_rx_sync_timing_ptp4l311.hex", l.buf[:l.lastN])
					}
				case SlaveDelay:
					r.raw, r.filtered, r.ok = o.Delay(&recs[i])
					if !capturedDelay {
						capturedDelay = true
						captureGolden(t, "slave_delay_timing_ptp4l311.hex", l.buf[:l.lastN])
					}
				}
				mu.Lock()
				got = append(got, r)
				mu.Unlock()
			}
		})
	}()
	// 20 Syncs with an offset printed.
	printed := regexp.MustCompile(`master offset\s+(-?\d+) s\d freq\s+\S+ path delay\s+(-?\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	for len(printed.FindAllString(slave.LogText(), -1)) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("ptp4l printed fewer than 20 offsets in 60 s\n%s", slave.LogText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the last Sync's datagram
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lines := printed.FindAllStringSubmatch(slave.LogText(), -1)
	mu.Lock()
	defer mu.Unlock()
	var syncs []out
	delays := 0
	for _, r := range got {
		if r.rec.Kind == SlaveSync && r.ok {
			syncs = append(syncs, r)
		}
		if r.rec.Kind == SlaveDelay {
			delays++
		}
	}
	// Match in order: every printed offset is one of our Syncs, the next
	// one on (ptp4l prints none for the first Sync after a delay appears,
	// which only starts its frequency estimate, and before any delay it
	// prints a stale 0).
	j, matched := 0, 0
	for _, m := range lines {
		off, _ := strconv.ParseInt(m[1], 10, 64)
		delay, _ := strconv.ParseInt(m[2], 10, 64)
		if delay == 0 {
			continue // no path delay yet: ptp4l prints its initial offset
		}
		k := j
		for k < len(syncs) && (syncs[k].offset != off || syncs[k].delay != delay) {
			k++
		}
		if k == len(syncs) {
			t.Errorf("ptp4l printed offset %d path delay %d: no Sync from the monitor gives it (next %d: %+v)", off, delay, j, syncs[min(j, len(syncs)-1)])
			continue
		}
		if k > j+1 {
			t.Errorf("printed offset %d matched Sync %d, %d Syncs after the last match", off, k, k-j)
		}
		j = k + 1
		matched++
	}
	t.Logf("%d Syncs (%d with an offset) and %d Delay_Reqs from the monitor; %d of %d printed offsets matched exactly; datagrams %d, undecodable %d",
		len(got)-delays, len(syncs), delays, matched, len(lines), l.Datagrams.Load(), l.Undecodable.Load())
	for _, s := range syncs[max(0, len(syncs)-3):] {
		t.Logf("seq %d: t2 %d t1 %d correction %d delay %d → offset %d", s.rec.Seq, s.rec.RxNS, s.rec.TxNS, s.rec.CorrectionNS, s.delay, s.offset)
	}
	if matched < 15 {
		t.Errorf("only %d printed offsets matched", matched)
	}
	if l.Undecodable.Load() != 0 || l.UnknownTLVs.Load() != 0 {
		t.Errorf("undecodable %d, unknown TLVs %d", l.Undecodable.Load(), l.UnknownTLVs.Load())
	}
}
