package agent

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
)

// countSink counts the records it is handed, by measurement, and keeps none.
type countSink struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countSink) Write(r []record.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range r {
		c.n[r[i].Measurement]++
	}
	return nil
}

func (c *countSink) Close() error { return nil }

func (c *countSink) count(m string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[m]
}

// procStatus reads VmRSS and VmHWM (bytes) from /proc/self/status.
func procStatus(t *testing.T) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch {
		case err != nil:
		case k == "VmRSS":
			rss = kb << 10
		case k == "VmHWM":
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// procCPU is the process's user + system CPU time from /proc/self/stat.
func procCPU(t *testing.T) time.Duration {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ 100
}

// TestFootprintOnRealKernel runs the agent's loop with two sources on a real
// kernel for a minute: a gpio-sim line pulled at up to 10 kHz (edges, both)
// and iio_dummy's buffer at 1 kHz from its hrtimer trigger, shipped to a
// sink that counts them. It samples the process's RSS and goroutines every
// second and checks that every event is accounted for: every edge the
// kernel saw is a gpio_event record or a counted loss, every scan the dummy
// pushed a sensor_scan record or a counted loss. The process is the agent
// package's test binary, so its RSS bounds the agent's from above.
func TestFootprintOnRealKernel(t *testing.T) {
	if os.Getenv("MONAGENT_GUEST") == "" {
		t.Skip("the footprint is measured in the rig's guests (MONAGENT_GUEST), on gpio-sim and iio_dummy")
	}
	sim := testbed.NewGPIOSim(t, 1)
	iio := sensorstest.RequireIIODummy(t)
	iio.Set(t, 1000, 1)
	const span = 60 * time.Second

	// The board's settings for fast edges: gpio.interval 100 ms, the
	// defaults otherwise (kernel queue 1024, ring 4096); the buffer's
	// defaults (kernel buffer 128 scans, ring 4096).
	rss0, _ := procStatus(t)
	iioBefore := iio.Counters(t)
	d, gpioSrc := newSimSource(t, sim, gpioLineCfg(0, "edge", "realtime"), 100*time.Millisecond, func(*gpioSource) {})
	bufSrc, err := newSensorBufferSource(sensors.NewFS("", ""), DefaultSensorBuffer(iio.Name, "accel_x"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Default()
	cfg.SelfMetrics.Enabled = false
	out := &countSink{n: map[string]int{}}
	a := newWithSources(cfg, quietLog(), out, gpioSrc, bufSrc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	cpu0, start := procCPU(t), time.Now()
	go func() { ran <- a.Run(ctx) }()
	waitLineIRQ(t, d)

	// Sample RSS and goroutines every second.
	var mu sync.Mutex
	var rss []int64
	var goroutines []int
	var peak int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			r, hwm := procStatus(t)
			mu.Lock()
			rss, goroutines, peak = append(rss, r), append(goroutines, runtime.NumGoroutine()), hwm
			mu.Unlock()
		}
	}()

	// Pull the line: 10 edges a millisecond, paced by the clock.
	pulls0, _ := filepath.Glob("/sys/devices/platform/*/" + sim.Chip + "/sim_gpio0/pull")
	if len(pulls0) != 1 {
		t.Fatalf("the line's pull attribute: %v", pulls0)
	}
	pull, err := os.OpenFile(pulls0[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	var pulls atomic.Int64
	level := [2][]byte{[]byte("pull-down"), []byte("pull-up")}
	genStart := time.Now()
	for ms := int64(0); time.Since(genStart) < span; ms++ {
		for range 10 {
			n := pulls.Add(1)
			if _, err := pull.WriteAt(level[n%2], 0); err != nil {
				t.Fatal(err)
			}
		}
		if wait := time.Duration(ms+1)*time.Millisecond - time.Since(genStart); wait > 0 {
			time.Sleep(wait)
		}
	}
	genTook := time.Since(genStart)
	iio.Set(t, 1000, 0) // the dummy pushes no more scans
	iioAfter := iio.Counters(t)
	time.Sleep(500 * time.Millisecond) // the last edges and scans reach their rings
	close(stopSampling)
	<-sampled
	cancel()
	if err := <-ran; err != nil {
		t.Error(err)
	}
	took, cpu := time.Since(start), procCPU(t)-cpu0

	// Every edge: the kernel saw pulls IRQs; each is an event or counted lost.
	irqs := collecttest.Self(t, gpioSrc, "line0_irqs").U
	read := collecttest.Self(t, gpioSrc, "events").U // read from the kernel's queue
	lost := collecttest.Self(t, gpioSrc, "line0_lost").U
	merged := collecttest.Self(t, gpioSrc, "line0_merged").U
	gRing := collecttest.Self(t, gpioSrc, "ring_dropped").U
	shipped := collecttest.Self(t, gpioSrc, "line0_events").U
	gRecs := out.count("gpio_event")
	made := uint64(pulls.Load())
	t.Logf("gpio: %d pulls in %v (%.0f/s): %d IRQs = %d read + %d lost from the kernel's queue + %d merged; %d read = %d shipped + %d dropped from the ring; %d gpio_event records",
		made, genTook.Round(time.Millisecond), float64(made)/genTook.Seconds(), irqs, read, lost, merged, read, shipped, gRing, gRecs)
	if irqs != made || read+lost+merged != irqs || shipped+gRing != read || uint64(gRecs) != shipped {
		t.Errorf("gpio: not every edge accounted for")
	}
	// Every scan: pushed by the dummy, a record, a ring drop or a kernel
	// buffer overflow (the gap between the scans pushed and the scans read).
	pushed := iioAfter.Scans - iioBefore.Scans
	sRead := collecttest.Self(t, bufSrc, "events").U
	sRing := collecttest.Self(t, bufSrc, "ring_dropped").U
	sRecs := out.count("sensor_scan")
	t.Logf("iio: %d scans pushed (%d trigger polls, %d periods skipped, %d dropped busy): %d read, %d dropped from the ring, %d sensor_scan records, %d lost in the kernel buffer",
		pushed, iioAfter.Fired-iioBefore.Fired, iioAfter.Overruns-iioBefore.Overruns, iioAfter.Busy-iioBefore.Busy, sRead, sRing, sRecs, pushed-min(pushed, sRead))
	if sRead > pushed || uint64(sRecs)+sRing != sRead {
		t.Errorf("iio: %d pushed, %d read, %d records + %d ring drops: not every scan accounted for", pushed, sRead, sRecs, sRing)
	}

	mu.Lock()
	defer mu.Unlock()
	if len(rss) < 10 {
		t.Fatalf("%d RSS samples", len(rss))
	}
	steady := slices.Clone(rss[len(rss)/2:])
	slices.Sort(steady)
	maxG := slices.Max(goroutines)
	t.Logf("footprint (%s guest, the agent package's test binary): RSS before the sources %.1f MB, steady (median of the second half) %.1f MB, peak (VmHWM) %.1f MB; goroutines at most %d; CPU %v over %v (%.0f %% of one vCPU, an emulation figure under TCG)",
		os.Getenv("MONAGENT_GUEST"), mb(rss0), mb(steady[len(steady)/2]), mb(peak), maxG, cpu.Round(10*time.Millisecond), took.Round(time.Millisecond), 100*cpu.Seconds()/took.Seconds())
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }
