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
	received uint64 // scans read, each with a kernel timestamp
	gaps     uint64 // scans the handler pushed that the reader never got (the buffer was full)
	overruns uint64 // timer periods skipped: its callback ran that much late
	fired    uint64 // trigger polls
	busy     uint64 // polls not passed on: the handler had not finished the last
	unrun    uint64 // polls passed on that ran no handler (its interrupt masked, a wake-up merged)
	runs     uint64 // handler runs
	pushed   uint64 // scans pushed: runs × burst
	p50, p99 int64  // intervals between consecutive kernel stamps, ns
	maxGap   int64
}

// lostByTrigger is the trigger periods that gave no scans; lostByReader the
// scans pushed that the reader did not get.
func (r iioRun) lostByTrigger() uint64 { return r.overruns + r.busy + r.unrun }
func (r iioRun) lostByReader() uint64  { return r.gaps }
func (r iioRun) readRate() float64     { return float64(r.received) / r.span.Seconds() }

func (r iioRun) String() string {
	return fmt.Sprintf("trigger %d Hz x burst %d for %v: read %d scans (%.0f/s) of %d pushed, lost in the buffer %d; trigger fired %d, periods skipped %d, polls dropped busy %d, unrun %d, handler runs %d; stamp interval p50 %d ns p99 %d ns max %d ns",
		r.rate, r.burst, r.span, r.received, r.readRate(), r.pushed, r.gaps, r.fired, r.overruns, r.busy, r.unrun, r.runs, r.p50, r.p99, r.maxGap)
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

// TestIIODummyBufferOnRealKernel reads iio_simple_dummy's buffer through
// sensors.Buffer at more than 50 kS/s for a fixed span: the hrtimer trigger
// at 200 Hz (a rate the emulated guest's timer mostly keeps), 384 scans a
// trigger (an ADC driver emptying its FIFO), 76.8 kS/s asked for (the
// emulated amd64 guest's timer has lost up to 10 % of its periods), every
// scan with its kernel timestamp, the counts exact against the trigger's and
// the handler's, and every loss counted; the reader must lose none.
func TestIIODummyBufferOnRealKernel(t *testing.T) {
	d := requireIIODummy(t)
	r := d.capture(t, 200, 384, 5*time.Second, 8192)
	t.Logf("iio_dummy, hrtimer trigger, buffer 8192 scans: %v", r)
	if r.lostByReader() > 0 {
		t.Errorf("the reader lost %d scans", r.lostByReader())
	}
	if r.readRate() < 50_000 {
		t.Errorf("read %.0f scans/s, want at least 50000 (the trigger lost %d periods)", r.readRate(), r.lostByTrigger())
	}
}

// TestIIORateLadderOnRealKernel finds where the first loss appears, each
// rung for a fixed span: of the kernel's trigger (one scan a trigger, the
// rate raised until a period gives no scan), and of the reader (200 Hz, the
// scans a trigger raised until the buffer drops one).
func TestIIORateLadderOnRealKernel(t *testing.T) {
	d := requireIIODummy(t)
	const span = 2 * time.Second
	ladder := func(what string, rungs [][2]int, lost func(iioRun) uint64) {
		for _, rung := range rungs {
			r := d.capture(t, rung[0], rung[1], span, 4096)
			t.Logf("%s ladder: %v", what, r)
			if lost(r) > 0 {
				t.Logf("%s ladder: first loss at %d scans/s requested (%d Hz x %d): %d lost", what, rung[0]*rung[1], rung[0], rung[1], lost(r))
				return
			}
		}
		t.Logf("%s ladder: no loss up to the last rung", what)
	}
	ladder("trigger", [][2]int{{100, 1}, {200, 1}, {500, 1}, {1_000, 1}, {2_000, 1}, {5_000, 1}, {10_000, 1}}, iioRun.lostByTrigger)
	ladder("reader", [][2]int{{200, 64}, {200, 128}, {200, 256}, {200, 512}, {200, 1024}, {200, 2048}}, iioRun.lostByReader)
}
