package sensors_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
)

// iioDummy is the rig's dummy device read through this package.
type iioDummy struct {
	*sensorstest.IIODummy
	fs  sensors.FS
	dev sensors.IIODevice
}

func requireIIODummy(t *testing.T) *iioDummy {
	t.Helper()
	d := &iioDummy{IIODummy: sensorstest.RequireIIODummy(t), fs: sensors.NewFS("", "")}
	var err error
	if d.dev, err = d.fs.FindIIODevice(d.Name); err != nil {
		t.Fatal(err)
	}
	return d
}

// iioRun is one capture: what the reader got and what the kernel counted.
type iioRun struct {
	rate     int // the trigger's frequency, Hz
	burst    int // scans the handler pushes a trigger
	span     time.Duration
	on       time.Duration // from opening the buffer to disabling it: the trigger ran within it
	received uint64        // scans read, each with a kernel timestamp
	gaps     uint64        // scans the handler pushed that the reader never got (the buffer was full)
	overruns uint64        // timer periods skipped: its callback ran that much late
	fired    uint64        // trigger polls
	busy     uint64        // polls not passed on: the handler had not finished the last
	unrun    uint64        // polls passed on that ran no handler (its interrupt masked, a wake-up merged)
	runs     uint64        // handler runs
	pushed   uint64        // scans pushed: runs × burst
	p50, p99 int64         // intervals between consecutive kernel stamps, ns
	maxGap   int64
}

// lostByTrigger is the trigger periods that gave no scans; lostByReader the
// scans pushed that the reader did not get.
func (r iioRun) lostByTrigger() uint64 { return r.overruns + r.busy + r.unrun }
func (r iioRun) lostByReader() uint64  { return r.gaps }

// asked is the scans a second the run asked of the kernel; readRate those
// it read a second the buffer was on (timed from before it was opened to
// its disabling, at least as long as the trigger ran: never overstated).
func (r iioRun) asked() int        { return r.rate * r.burst }
func (r iioRun) readRate() float64 { return float64(r.received) / r.on.Seconds() }

func (r iioRun) String() string {
	return fmt.Sprintf("trigger %d Hz x burst %d (%d scans/s asked) for %v (buffer on %v): read %d scans (%.0f/s) of %d pushed, lost in the buffer %d; trigger fired %d, periods skipped %d, polls dropped busy %d, unrun %d, handler runs %d; stamp interval p50 %d ns p99 %d ns max %d ns",
		r.rate, r.burst, r.asked(), r.span, r.on.Round(time.Millisecond), r.received, r.readRate(), r.pushed, r.gaps, r.fired, r.overruns, r.busy, r.unrun, r.runs, r.p50, r.p99, r.maxGap)
}

// capture runs the trigger at rate, burst scans a trigger, for span and
// reads the buffer through sensors.Buffer (the agent's buffered IIO path)
// with a kernel buffer of length scans. Each scan's accel_x is the dummy's
// scan count modulo 2^16, so a scan the buffer dropped is a gap; the run
// checks every scan has a kernel stamp, stamps never go back, no scan comes
// twice, and that the counts add up exactly: runs × burst = pushed = read +
// lost in the buffer, and fired = runs + busy + unrun with unrun ≥ 0.
func (d *iioDummy) capture(t *testing.T, rate, burst int, span time.Duration, length int) iioRun {
	t.Helper()
	d.Set(t, rate, burst)
	before := d.Counters(t)
	opened := time.Now()
	b, err := d.fs.OpenBuffer(d.dev, []string{"accel_x"}, length)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !b.Stamped() {
		t.Fatal("the dummy's buffer has no timestamp channel")
	}
	r := iioRun{rate: rate, burst: burst, span: span}
	idx := before.Scans // the scan count of the last scan seen
	var last int64
	// Room for every interval up front: growing the slice while reading
	// (copies of megabytes, and the collections they bring) stalled the
	// reader enough for the kernel buffer to overflow.
	intervals := make([]int64, 0, int(float64(rate*burst)*span.Seconds()*1.1)+4096)
	scans := make([]sensors.Scan, 64)
	take := func(n int) {
		for _, sc := range scans[:n] {
			r.received++
			if sc.Stamp == 0 {
				t.Errorf("scan %d has no kernel timestamp", r.received)
			}
			if last != 0 {
				if sc.Stamp < last {
					t.Errorf("scan %d: kernel stamp %d before the last one's %d", r.received, sc.Stamp, last)
				}
				intervals = append(intervals, sc.Stamp-last)
			}
			last = sc.Stamp
			step := uint64(uint16(uint16(sc.Values[0]) - uint16(idx)))
			if step == 0 {
				t.Errorf("scan %d: scan %d again (a duplicate)", r.received, idx)
				continue
			}
			r.gaps += step - 1
			idx += step
		}
	}
	start := time.Now()
	for time.Since(start) < span {
		n, err := b.ReadScans(scans, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		take(n)
	}
	// Stop the trigger (disabling the buffer detaches it), then read what
	// the buffer still holds.
	sensorstest.WriteSys(t, filepath.Join(d.dev.Dir, "buffer", "enable"), "0")
	r.on = time.Since(opened)
	for {
		n, err := b.ReadScans(scans, 200*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		take(n)
	}
	after := d.Counters(t)
	r.fired, r.busy, r.overruns = after.Fired-before.Fired, after.Busy-before.Busy, after.Overruns-before.Overruns
	r.runs, r.pushed = after.Runs-before.Runs, after.Scans-before.Scans
	if idx > after.Scans {
		t.Errorf("%d Hz: the scans read run to scan %d, the dummy counted %d", rate, idx, after.Scans)
	}
	r.gaps += after.Scans - idx // dropped after the last scan read
	if r.pushed != r.runs*uint64(burst) {
		t.Errorf("%d Hz: %d scans pushed in %d handler runs of %d", rate, r.pushed, r.runs, burst)
	}
	if r.received+r.gaps != r.pushed {
		t.Errorf("%d Hz: %d scans read + %d lost in the buffer != %d pushed", rate, r.received, r.gaps, r.pushed)
	}
	if r.runs+r.busy > r.fired {
		t.Errorf("%d Hz: %d handler runs + %d polls dropped busy > %d trigger polls", rate, r.runs, r.busy, r.fired)
	} else {
		r.unrun = r.fired - r.runs - r.busy
	}
	if r.fired == 0 {
		t.Errorf("%d Hz: the trigger never fired", rate)
	}
	if len(intervals) > 0 {
		slices.Sort(intervals)
		r.p50, r.p99, r.maxGap = intervals[len(intervals)/2], intervals[len(intervals)*99/100], intervals[len(intervals)-1]
	}
	return r
}

// ladder runs one capture of span a rung on a kernel buffer of length
// scans, each rung a trigger rate and the scans a trigger, in rising order,
// and stops at the first rung that loses a scan as lost counts them. It
// returns the rungs run: none but the last lost a scan.
func (d *iioDummy) ladder(t *testing.T, what string, rungs [][2]int, span time.Duration, length int, lost func(iioRun) uint64) []iioRun {
	t.Helper()
	var runs []iioRun
	for _, rung := range rungs {
		r := d.capture(t, rung[0], rung[1], span, length)
		runs = append(runs, r)
		t.Logf("%s ladder: %v", what, r)
		if lost(r) > 0 {
			t.Logf("%s ladder: first loss at %d scans/s asked (%d Hz x %d): %d lost", what, r.asked(), r.rate, r.burst, lost(r))
			return runs
		}
	}
	t.Logf("%s ladder: no loss up to the last rung", what)
	return runs
}

// The fixed span of TestIIODummyBufferOnRealKernel and its calibration.
const (
	iioRate   = 200    // the trigger, Hz: a rate the emulated guests' timers mostly keep
	iioFull   = 384    // the most scans a trigger the span asks (76.8 kS/s; an ADC driver emptying its FIFO)
	iioMargin = 2      // the span asks at most 1/iioMargin of the most the reader read whole
	iioLength = 8192   // the kernel buffer, scans (128 KiB)
	iioBoard  = 50_000 // scans/s: the board's figure, logged
)

// TestIIODummyBufferOnRealKernel reads iio_simple_dummy's buffer through
// sensors.Buffer for a fixed span (5 s) at a rate the guest has just shown
// its reader takes, and asserts what the host's speed cannot change: every
// scan with its kernel timestamp, the stamps never going back, no scan
// twice, the counts exact against the trigger's and the handler's (scans
// pushed = read + lost in the buffer), and no scan lost by the reader.
//
// Under emulation the guest is as fast as its host, idle or loaded, so the
// rate is calibrated first, on the same 8192-scan buffer: the hrtimer
// trigger at 200 Hz, the scans a trigger raised by 1⅓ to 1½ a rung from 32
// to 1024 (6.4 to 204.8 kS/s asked), one second a rung, up to the first
// rung in which the reader loses a scan. What the reader read in a rung it
// lost nothing in is what it has shown it takes; the trigger pushes less
// than it is asked when the emulated timer skips periods (the host's
// speed again), so the calibration is the most read in such a rung, not
// the most asked. The span then asks half of that, and at most 200 Hz ×
// 384 = 76.8 kS/s. Half, because the span is five rungs long (five times
// the chance of the host stalling the guest) and the host's load may
// change after the calibration: at half the rate the buffer holds twice
// the stall, and a reader that needs half of what it took drains a
// backlog at least as fast as it built up. The trigger never pushes faster
// than asked, so the span never gives the reader more than half of it.
//
// 50 kS/s is the figure the board needs; whether the span read it is
// logged, not asserted. Where the calibration shows the reader takes
// twice that, the span asks at least 50 kS/s, and the reader losing none
// of it is the criterion on monagent's side; a read short of it is then
// the trigger's periods lost, counted and logged (the emulator's timer).
func TestIIODummyBufferOnRealKernel(t *testing.T) {
	d := requireIIODummy(t)
	var rungs [][2]int
	for _, burst := range []int{32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024} {
		rungs = append(rungs, [2]int{iioRate, burst})
	}
	cal := d.ladder(t, "calibration", rungs, time.Second, iioLength, iioRun.lostByReader)
	whole := cal
	if cal[len(cal)-1].lostByReader() > 0 {
		whole = cal[:len(cal)-1]
	}
	if len(whole) == 0 {
		t.Fatalf("the reader lost scans at the calibration's lowest rung, %d scans/s asked: no rate to run at", cal[0].asked())
	}
	took := whole[0]
	for _, r := range whole[1:] {
		if r.readRate() > took.readRate() {
			took = r
		}
	}
	burst := max(1, min(iioFull, int(took.readRate())/(iioMargin*iioRate)))
	t.Logf("calibration: the reader read %.0f scans/s whole (%d Hz x %d, %d asked, the trigger lost %d periods); the span asks 1/%d of that, at most %d: %d Hz x %d",
		took.readRate(), took.rate, took.burst, took.asked(), took.lostByTrigger(), iioMargin, iioRate*iioFull, iioRate, burst)
	r := d.capture(t, iioRate, burst, 5*time.Second, iioLength)
	t.Logf("iio_dummy, hrtimer trigger, buffer %d scans: %v", iioLength, r)
	if r.lostByReader() > 0 {
		t.Errorf("the reader lost %d of %d scans pushed at %d scans/s asked, 1/%d of the %.0f it read whole in the calibration", r.lostByReader(), r.pushed, r.asked(), iioMargin, took.readRate())
	}
	t.Logf("%d scans/s: read %.0f/s whole of %d asked (the trigger lost %d periods): reached %v; the reader shown to take twice that in the calibration %v",
		iioBoard, r.readRate(), r.asked(), r.lostByTrigger(), r.readRate() >= iioBoard && r.lostByReader() == 0, took.readRate() >= iioMargin*iioBoard)
}

// TestIIORateLadderOnRealKernel finds where the first loss appears, each
// rung for a fixed span: of the kernel's trigger (one scan a trigger, the
// rate raised until a period gives no scan), and of the reader (200 Hz, the
// scans a trigger raised until the buffer drops one). Its figures are the
// emulated guest's, so its host's: it asserts only what capture does.
func TestIIORateLadderOnRealKernel(t *testing.T) {
	d := requireIIODummy(t)
	const span = 2 * time.Second
	d.ladder(t, "trigger", [][2]int{{100, 1}, {200, 1}, {500, 1}, {1_000, 1}, {2_000, 1}, {5_000, 1}, {10_000, 1}}, span, 4096, iioRun.lostByTrigger)
	d.ladder(t, "reader", [][2]int{{200, 64}, {200, 128}, {200, 256}, {200, 512}, {200, 1024}, {200, 2048}}, span, 4096, iioRun.lostByReader)
}
