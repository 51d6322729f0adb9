package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sink/spool"
)

// footprintEnv, set by the QEMU rig's footprint guest
// (internal/testbed/guest TestGuestARMFootprint and
// TestGuestAMD64Footprint), is how long edges are
// made ("60s"); the guest has gpio-sim, iio_simple_dummy and the hrtimer
// trigger, and ships the binary ($MONAGENT_GUEST_BIN).
const footprintEnv = "MONAGENT_GUEST_FOOTPRINT"

const (
	footprintEdgeRate = 1000 // pulls of the gpio-sim line per second (both edges recorded): the board's 1 kHz
	footprintScanRate = 1000 // the hrtimer trigger's rate: iio_simple_dummy scans per second
	footprintADC      = "fpadc"
	footprintTrigger  = "fptrig"
	footprintHTTP     = "127.0.0.1:19469"
	footprintIIOLen   = 1024 // the kernel buffer, in scans
)

// TestFootprintOnGuestKernel runs `monagent run` as on the board, with a
// GPIO line pulled at 1 kHz (gpio-sim, from a thread of this test;
// behind, as fast as the guest takes) and an IIO ADC scanned at 1 kHz
// through its buffer (iio_simple_dummy on iio-trig-hrtimer), and measures
// the agent: its RSS (VmRSS and VmHWM, every second; on arm VmHWM within
// the board's 25 MB), its goroutines (/metrics), its CPU time and context
// switches (the wake-ups its readers take), and that every event is
// accounted for. Before the agent, 2 s bursts tell what an
// edge costs the guest without it. GPIO: the line's IRQs (the edges
// the kernel saw) = gpio_event records + the agent's counted losses (ring
// drops, kernel-queue seqno gaps, edges merged before queuing); the pulls
// beside them. IIO: the scans the trigger delivered (the consumer's IRQ
// count) = sensor_scan records + the agent's ring drops (at its stop the
// agent disables the buffer and reads what it still holds). After the
// span a ladder (2, 4, 8 kHz, 5 s a rung, until the guest cannot pull
// faster) finds the highest edge rate the agent records whole here,
// calibrated by the rates the guest takes without the agent.
// Under QEMU TCG the CPU figures are the emulator's.
func TestFootprintOnGuestKernel(t *testing.T) {
	spec := os.Getenv(footprintEnv)
	if spec == "" {
		t.Skipf("the footprint run needs the QEMU rig's guest with gpio-sim and iio_simple_dummy (it sets %s)", footprintEnv)
	}
	span, err := time.ParseDuration(spec)
	if err != nil || span <= 0 {
		t.Fatalf("%s=%q: want a duration", footprintEnv, spec)
	}
	var profile time.Duration
	if p := os.Getenv(footprintPprofEnv); p != "" {
		if profile, err = time.ParseDuration(p); err != nil || profile <= 0 || profile > span {
			t.Fatalf("%s=%q: want a duration within the span %v", footprintPprofEnv, p, span)
		}
	}
	dir := t.TempDir()
	sim := testbed.NewGPIOSim(t, 1)
	adc := newFootprintADC(t)
	// What an edge costs before the agent: pulls/s with nobody holding the
	// line (no IRQ), with a request nobody reads (the kernel's IRQ path;
	// its queue fills and drops), and read by package gpio's batch reader
	// in this process (the path the agent's reader takes).
	var phase [3]float64
	for i := range phase {
		phase[i] = footprintPhase(t, sim, i)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`host: guest
paths:
  runtime_dir: %[1]s
phc:
  enabled: false
spool:
  dir: %[1]s/spool
http:
  pprof: %[5]v
self_metrics:
  interval: 5s
gpio:
  enabled: true
  chips:
    - chip: %[2]s
      ring: 4096
      lines:
        - {offset: 0, name: fp, edge: both}
sensors:
  buffers:
    - device: %[3]s
      channels: [voltage0, accel_x]
      length: %[4]d
`, dir, sim.Chip, footprintADC, footprintIIOLen, profile > 0))
	// The agent is stopped by SIGTERM a few seconds after the edges; its
	// --duration only bounds a run that hangs.
	cmd := command("run", "--config", cfg, "--duration", (span + 5*time.Minute).String(), "--http", footprintHTTP)
	cmd.Dir = dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	pid := cmd.Process.Pid

	mon := &footprintMonitor{pid: pid}
	stopMon := mon.start()
	consumer := gpio.Consumer(sim.Path())
	var scanIRQ int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, gerr := testbed.IRQCount(consumer)
		n, _, ierr := testbed.IRQNamed(footprintADC + "_consumer")
		if gerr == nil && ierr == nil {
			scanIRQ = n
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the agent exited before holding the line and the ADC's buffer: %v\n%s", err, log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s the agent holds neither the line (%v) nor the ADC's buffer (%v)\n%s", gerr, ierr, log.String())
		}
	}
	ready := time.Since(start)
	t.Logf("the agent holds the line and the ADC's buffer %v after its start", ready.Round(100*time.Millisecond))
	time.Sleep(2 * time.Second)

	irq0, _ := testbed.IRQCount(consumer)
	cpu0, at0, sw0 := procCPU(t, pid), time.Now(), procSwitches(pid)
	scans0, _ := testbed.IRQCountOf(scanIRQ)
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		if profile > 0 {
			time.Sleep((span - profile) / 2) // the middle of the edges' span
			footprintProfile(t, profile)
		}
	}()
	pulls, made, err := footprintEdges(sim.PullPath(0), footprintEdgeRate, span)
	<-profiled
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the IRQ thread and the reader catch up
	irq1, err := testbed.IRQCount(consumer)
	if err != nil {
		t.Fatal(err)
	}
	cpu1, at1, sw1 := procCPU(t, pid), time.Now(), procSwitches(pid)
	scans1, _ := testbed.IRQCountOf(scanIRQ)
	hwm := procStatusKiB(pid, "VmHWM") // the peak through the 1 kHz span, before the ladder
	rungs := footprintLadder(t, sim, consumer, pid)
	irqEnd, err := testbed.IRQCount(consumer)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the last collections
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the agent ended before its SIGTERM: %v\n%s", err, log.String())
	}
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		t.Fatalf("the agent did not stop a minute after SIGTERM\n%s", log.String())
	}
	stopMon()
	if err != nil {
		t.Fatalf("monagent run: %v\n%s", err, log.String())
	}
	scans, err := testbed.IRQCountOf(scanIRQ)
	if err != nil {
		t.Fatal(err)
	}
	got := readFootprintSpool(t, filepath.Join(dir, "spool"), rungs)

	// GPIO: what the kernel saw, against what the agent recorded and counted.
	gs, ok := got.source["gpio:"+sim.Chip]
	if !ok {
		t.Fatalf("no monagent_source record of gpio:%s\n%s", sim.Chip, log.String())
	}
	seen, all := irq1-irq0, irqEnd-irq0 // the 1 kHz span's edges; all edges (the ladder's too)
	counted := gs["ring_dropped"] + gs["line0_lost"] + gs["line0_merged"]
	t.Logf("footprint GPIO: %d pulls in %v (%.0f pulls/s, target %d; before the agent, 2 s each: %.0f pulls/s unheld, %.0f held unread, %.0f read by package gpio here); line IRQs (edges the kernel saw) %d, %d with the ladder's; gpio_event records %d; "+
		"agent's counted losses: ring_dropped %d, line0_lost (seqno gaps) %d, line0_merged (IRQs − queued) %d; agent's line0_irqs %d; collections deferred %d",
		pulls, span, made, footprintEdgeRate, phase[0], phase[1], phase[2], seen, all, got.edges, gs["ring_dropped"], gs["line0_lost"], gs["line0_merged"], gs["line0_irqs"], gs["deferred"])
	if got.edges+counted != gs["line0_irqs"] || gs["line0_irqs"] != all {
		t.Errorf("GPIO: %d records + %d counted lost ≠ the agent's %d IRQs (the kernel's: %d)", got.edges, counted, gs["line0_irqs"], all)
	}
	best := 0.0
	for i, r := range rungs {
		lossless := got.rungEdges[i] == r.irqs
		if lossless {
			best = max(best, r.made)
		}
		t.Logf("footprint ladder: %d pulls/s asked for %v: %.0f made, %d IRQs, %d gpio_event records in the rung (lossless %v), agent CPU %.0f %%",
			r.rate, footprintRungSpan, r.made, r.irqs, got.rungEdges[i], lossless, 100*r.cpu)
	}
	t.Logf("footprint ladder: the fastest rung whose every edge the agent recorded, beside 1 kHz IIO: %.0f edges/s (0: none; the guest's limit before the agent: %.0f pulls/s read by package gpio alone)", best, phase[2])
	if seen != pulls {
		t.Logf("GPIO: %d of %d pulls merged before the line's IRQ (gpio-sim's interrupt, pending while the CPU was busy): no consumer can see them", int64(pulls)-int64(seen), pulls)
	}

	// IIO: the scans the trigger delivered, against what the agent recorded.
	is, ok := got.source["sensor_buffer:"+adc]
	if !ok {
		t.Fatalf("no monagent_source record of sensor_buffer:%s", adc)
	}
	unread := int64(scans) - int64(got.scans) - int64(is["ring_dropped"])
	t.Logf("footprint IIO: trigger at %d Hz delivered %d scans (consumer IRQ %d); sensor_scan records %d; ring_dropped %d; kernel_lost %d; "+
		"not read, not counted: %d (left in the %d-scan kernel buffer at stop, or dropped by it); trigger periods without a scan between recorded scans: %d",
		footprintScanRate, scans, scanIRQ, got.scans, is["ring_dropped"], is["kernel_lost"], unread, footprintIIOLen, got.scanGaps)
	if unread != 0 {
		t.Errorf("IIO: %d scans delivered, %d recorded, %d counted dropped: %d unaccounted", scans, got.scans, is["ring_dropped"], unread)
	}
	if got.dropped > 0 {
		t.Errorf("%d records dropped on the way to the spool (monagent dropped_records and monagent_spool dropped_*)", got.dropped)
	}

	// The process.
	cpu := (cpu1 - cpu0).Seconds() / at1.Sub(at0).Seconds()
	secs := at1.Sub(at0).Seconds()
	t.Logf("footprint process (%s, GOARCH %s in the guest): ready in %v; VmRSS steady (median of the edges' span) %.1f MiB, max %.1f MiB; "+
		"VmHWM %.1f MiB; goroutines max %d (last %d, /metrics go_goroutines); CPU %.0f %% of one CPU over the edges' span (%v user+sys in %v; under QEMU TCG: the emulator's figure); "+
		"context switches %.0f/s (%.2f per event)",
		filepath.Base(bin), runtime.GOARCH, ready.Round(100*time.Millisecond), mon.rssMedian(at0, at1)/1024, float64(mon.rssMax)/1024,
		float64(hwm)/1024, mon.goMax, mon.goLast, 100*cpu, (cpu1 - cpu0).Round(10*time.Millisecond), at1.Sub(at0).Round(10*time.Millisecond),
		float64(sw1-sw0)/secs, float64(sw1-sw0)/float64(max(1, seen+scans1-scans0)))
	t.Logf("footprint Go runtime, highest scraped: %s", mon.memLine())
	if hwm == 0 || mon.goMax == 0 {
		t.Errorf("the process was not measured: VmHWM %d kB, %d goroutines", hwm, mon.goMax)
	}
	const budget = 25 << 10 // kB: issue 25's 25 MB at 1 kHz sensors and GPIO, on the 32-bit board
	// A CPU profile holds its buffers and brings the binary's symbol tables
	// into memory: the budget is for the agent as it runs.
	if runtime.GOARCH == "arm" && hwm > budget && profile == 0 {
		t.Errorf("VmHWM %d kB over the board's budget of %d kB", hwm, budget)
	}
	t.Logf("footprint VmHWM after the ladder: %.1f MiB", float64(mon.hwm)/1024)
}

// The ladder after the 1 kHz span: the line pulled faster, footprintRungSpan
// a rung, until the generator falls short of its rate (the guest has no
// CPU left to give it).
var footprintRates = []int{2000, 4000, 8000}

const footprintRungSpan = 5 * time.Second

// footprintRung is one rung of the ladder: its rate, the pulls/s made, the
// line's IRQs, the agent's CPU, and its span in REALTIME ns (the edges'
// records fall within it).
type footprintRung struct {
	rate     int
	made     float64
	irqs     uint64
	cpu      float64
	from, to int64
}

// footprintLadder runs the ladder while the agent records, 1 s apart.
func footprintLadder(t *testing.T, sim *testbed.GPIOSim, consumer string, pid int) []footprintRung {
	t.Helper()
	var rungs []footprintRung
	for _, rate := range footprintRates {
		time.Sleep(time.Second)
		r := footprintRung{rate: rate, from: time.Now().UnixNano()}
		i0, err := testbed.IRQCount(consumer)
		if err != nil {
			t.Fatal(err)
		}
		c0, a0 := procCPU(t, pid), time.Now()
		if _, r.made, err = footprintEdges(sim.PullPath(0), rate, footprintRungSpan); err != nil {
			t.Fatal(err)
		}
		r.cpu = (procCPU(t, pid) - c0).Seconds() / time.Since(a0).Seconds()
		time.Sleep(500 * time.Millisecond) // the IRQ thread catches up
		i1, err := testbed.IRQCount(consumer)
		if err != nil {
			t.Fatal(err)
		}
		r.irqs, r.to = i1-i0, time.Now().UnixNano()
		rungs = append(rungs, r)
		if r.made < 0.9*float64(rate) {
			break
		}
	}
	return rungs
}

// footprintPprofEnv asks for the agent's CPU profile over this long (e.g.
// "20s") in the middle of the edges' span, and its heap profile after it,
// printed base64 on lines starting "##pprof " and "##heap ".
const footprintPprofEnv = "MONAGENT_FOOTPRINT_PPROF"

// footprintProfile takes the agent's CPU profile over d, then its heap
// profile (/debug/pprof), and prints them, base64 in lines of 76
// characters after "##pprof " and "##heap ".
func footprintProfile(t *testing.T, d time.Duration) {
	for _, p := range []struct{ name, path, prefix string }{
		{"CPU", fmt.Sprintf("profile?seconds=%d", int(d.Seconds())), "##pprof"},
		{"heap", "heap", "##heap"},
	} {
		c := &http.Client{Timeout: d + 30*time.Second}
		resp, err := c.Get(fmt.Sprintf("http://%s/debug/pprof/%s", footprintHTTP, p.path))
		if err != nil {
			t.Errorf("%s profile: %v", p.name, err)
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s profile: %s, %d bytes, %v", p.name, resp.Status, len(b), err)
			return
		}
		enc := base64.StdEncoding.EncodeToString(b)
		var out strings.Builder
		for len(enc) > 0 {
			n := min(76, len(enc))
			fmt.Fprintf(&out, "%s %s\n", p.prefix, enc[:n])
			enc = enc[n:]
		}
		fmt.Print(out.String())
		t.Logf("%s profile: %d bytes printed on %s lines", p.name, len(b), p.prefix)
	}
}

// footprintPhase pulls the line as fast as it takes for 2 s: unheld
// (phase 0), held by a request nobody reads (1), or read by package gpio's
// batch reader (2); it returns the pulls/s.
func footprintPhase(t *testing.T, sim *testbed.GPIOSim, phase int) float64 {
	t.Helper()
	if phase > 0 {
		c, err := gpio.Open(sim.Path())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		req, err := c.RequestLines([]int{0}, gpio.LineConfig{Consumer: "footprint", Edge: gpio.DetectBoth})
		if err != nil {
			t.Fatal(err)
		}
		defer req.Close()
		if phase == 2 {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				rd, buf := req.Reader(64), make([]gpio.Event, 64)
				for ctx.Err() == nil {
					rd.Read(ctx, buf)
				}
			}()
			defer func() { cancel(); <-done }()
		}
	}
	_, made, err := footprintEdges(sim.PullPath(0), 1e6, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return made
}

// newFootprintADC makes the iio_simple_dummy device and an hrtimer trigger
// at footprintScanRate, sets the device to it, and returns the device's node
// (iio:deviceN).
func newFootprintADC(t *testing.T) string {
	t.Helper()
	const cfs = "/sys/kernel/config/iio"
	mk := func(p string) {
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatalf("%v (needs iio_dummy, iio-trig-hrtimer and configfs)", err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	mk(filepath.Join(cfs, "devices/dummy", footprintADC))
	mk(filepath.Join(cfs, "triggers/hrtimer", footprintTrigger))
	dev, trig := iioNamed(t, "iio:device*", footprintADC), iioNamed(t, "trigger*", footprintTrigger)
	write := func(p, v string) {
		if err := os.WriteFile(p, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(trig, "sampling_frequency"), strconv.Itoa(footprintScanRate))
	write(filepath.Join(dev, "trigger/current_trigger"), footprintTrigger)
	t.Cleanup(func() { os.WriteFile(filepath.Join(dev, "trigger/current_trigger"), nil, 0) })
	return filepath.Base(dev)
}

// iioNamed is the directory under /sys/bus/iio/devices matching glob whose
// name is name.
func iioNamed(t *testing.T, glob, name string) string {
	t.Helper()
	ds, _ := filepath.Glob(filepath.Join("/sys/bus/iio/devices", glob))
	for _, d := range ds {
		if b, err := os.ReadFile(filepath.Join(d, "name")); err == nil && strings.TrimSpace(string(b)) == name {
			return d
		}
	}
	t.Fatalf("no IIO %s named %s among %v", glob, name, ds)
	return ""
}

// footprintEdges pulls the gpio-sim line up and down rate times a second
// for span from a thread of its own, paced in 1 ms slices: each slice
// writes the pulls due by its end, then sleeps (one CPU: a spinning
// generator would starve the agent). It returns the pulls and their rate.
func footprintEdges(pullPath string, rate int, span time.Duration) (uint64, float64, error) {
	f, err := os.OpenFile(pullPath, os.O_WRONLY, 0)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	levels := [2][]byte{[]byte("pull-down"), []byte("pull-up")}
	type result struct {
		n   uint64
		err error
	}
	done := make(chan result)
	start := time.Now()
	go func() {
		runtime.LockOSThread()
		var n uint64
		for {
			el := time.Since(start)
			if el >= span {
				break
			}
			// Behind (a pull costs more than its period), it pulls as fast
			// as it can, until the span ends.
			due := uint64(el.Seconds() * float64(rate))
			for ; n < due && time.Since(start) < span; n++ {
				if _, err := f.WriteAt(levels[(n+1)%2], 0); err != nil {
					done <- result{n, err}
					return
				}
			}
			time.Sleep(time.Millisecond - el%time.Millisecond)
		}
		if n%2 == 1 { // the line ends low, as it began
			if _, err := f.WriteAt(levels[0], 0); err != nil {
				done <- result{n, err}
				return
			}
			n++
		}
		done <- result{n, nil}
	}()
	r := <-done
	return r.n, float64(r.n) / time.Since(start).Seconds(), r.err
}

// footprintMonitor samples the process: VmRSS and VmHWM every second,
// go_goroutines from /metrics every 5 s.
type footprintMonitor struct {
	pid int

	mu          sync.Mutex
	rss         []rssSample
	rssMax, hwm int64 // kB
	goMax       int
	goLast      int
	mem         map[string]float64 // footprintMemStats, their highest
}

type rssSample struct {
	at  time.Time
	rss int64
}

func (m *footprintMonitor) start() (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		client := &http.Client{Timeout: 5 * time.Second}
		for i := 0; ; i++ {
			m.sample()
			if i%5 == 4 {
				m.goroutines(client)
			}
			select {
			case <-quit:
				return
			case <-tick.C:
			}
		}
	}()
	return func() { close(quit); <-done }
}

func (m *footprintMonitor) sample() {
	rss, hwm := procStatusKiB(m.pid, "VmRSS"), procStatusKiB(m.pid, "VmHWM")
	if rss == 0 { // gone, or exiting: a zombie has no memory
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rss = append(m.rss, rssSample{time.Now(), rss})
	m.rssMax, m.hwm = max(m.rssMax, rss), max(m.hwm, hwm)
}

func (m *footprintMonitor) goroutines(c *http.Client) {
	resp, err := c.Get("http://" + footprintHTTP + "/metrics")
	if err != nil {
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "go_goroutines "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			m.goMax, m.goLast = max(m.goMax, n), n
		}
		for _, name := range footprintMemStats {
			if v, ok := strings.CutPrefix(l, name+" "); ok {
				f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if m.mem == nil {
					m.mem = map[string]float64{}
				}
				m.mem[name] = max(m.mem[name], f)
			}
		}
	}
}

// footprintMemStats are the Go runtime's figures of where the memory is
// (/metrics), each logged at its highest.
var footprintMemStats = []string{"go_memstats_heap_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_next_gc_bytes",
	"go_memstats_stack_inuse_bytes", "go_memstats_sys_bytes", "go_gc_gogc_percent"}

// memLine is the runtime's memory figures (MiB, at their highest).
func (m *footprintMonitor) memLine() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, name := range footprintMemStats {
		if v, ok := m.mem[name]; ok {
			short := strings.TrimPrefix(strings.TrimPrefix(name, "go_memstats_"), "go_gc_")
			if strings.HasSuffix(name, "_bytes") {
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", short, v/(1<<20)))
			} else {
				parts = append(parts, fmt.Sprintf("%s %.0f", short, v))
			}
		}
	}
	return strings.Join(parts, ", ")
}

// rssMedian is the median VmRSS (kB) sampled between from and to.
func (m *footprintMonitor) rssMedian(from, to time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var in []int64
	for _, s := range m.rss {
		if !s.at.Before(from) && !s.at.After(to) {
			in = append(in, s.rss)
		}
	}
	if len(in) == 0 {
		return 0
	}
	slices.Sort(in)
	return float64(in[len(in)/2])
}

// procSwitches is the context switches (voluntary and not) of all of a
// process's threads so far: each is a wake-up or a preemption.
func procSwitches(pid int) uint64 {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
	var n uint64
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "voluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			} else if v, ok := strings.CutPrefix(l, "nonvoluntary_ctxt_switches:"); ok {
				k, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
				n += k
			}
		}
	}
	return n
}

// procCPU is a process's user + system time (/proc/PID/stat, in clock ticks
// of 1/100 s).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// footprintSpool is what the run left in its spool.
type footprintSpool struct {
	edges, scans uint64
	rungEdges    []uint64                     // gpio_event records within each rung of the ladder
	scanGaps     uint64                       // trigger periods without a scan between consecutive sensor_scan records
	source       map[string]map[string]uint64 // the last monagent_source fields by source
	dropped      uint64                       // monagent dropped_records + monagent_spool dropped_*, last
}

// readFootprintSpool counts the gpio_event and sensor_scan records (the
// scans' kernel stamps give the gaps; the edges' times place them in the
// rungs) and keeps the last self-metrics.
func readFootprintSpool(t *testing.T, dir string, rungs []footprintRung) footprintSpool {
	t.Helper()
	out := footprintSpool{source: map[string]map[string]uint64{}, rungEdges: make([]uint64, len(rungs))}
	var lastScan int64
	period := int64(time.Second) / footprintScanRate
	var agent, sp uint64
	_, err := spool.ReadDir(dir, func(e spool.Entry) error {
		for rest := e.Lines; len(rest) > 0; {
			line := rest
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				line, rest = rest[:i], rest[i+1:]
			} else {
				rest = nil
			}
			switch {
			case bytes.HasPrefix(line, []byte("gpio_event,")):
				out.edges++
				at, _ := strconv.ParseInt(string(line[bytes.LastIndexByte(line, ' ')+1:]), 10, 64)
				for i, r := range rungs {
					if at >= r.from && at <= r.to {
						out.rungEdges[i]++
					}
				}
			case bytes.HasPrefix(line, []byte("sensor_scan,")):
				out.scans++
				fields, _ := lineFields(line)
				if k := int64(fields["kernel_ns"]); lastScan != 0 && k-lastScan > period*3/2 {
					out.scanGaps += uint64((k-lastScan+period/2)/period) - 1
				}
				lastScan = int64(fields["kernel_ns"])
			case bytes.HasPrefix(line, []byte("monagent_source,")):
				fields, tags := lineFields(line)
				out.source[tags["source"]] = fields
			case bytes.HasPrefix(line, []byte("monagent,")):
				fields, _ := lineFields(line)
				agent = fields["dropped_records"]
			case bytes.HasPrefix(line, []byte("monagent_spool,")):
				fields, _ := lineFields(line)
				sp = fields["dropped_cap"] + fields["dropped_buffer"] + fields["dropped_disk"] + fields["dropped_corrupt"]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out.dropped = agent + sp
	return out
}

// lineFields decodes one line of line protocol: its integer fields (signed
// ones as their bits) and its tags.
func lineFields(line []byte) (map[string]uint64, map[string]string) {
	fields, tags := map[string]uint64{}, map[string]string{}
	d := lineprotocol.NewDecoderWithBytes(line)
	if !d.Next() {
		return fields, tags
	}
	if _, err := d.Measurement(); err != nil {
		return fields, tags
	}
	for {
		k, v, err := d.NextTag()
		if err != nil || k == nil {
			break
		}
		tags[string(k)] = string(v)
	}
	for {
		k, v, err := d.NextField()
		if err != nil || k == nil {
			break
		}
		switch v.Kind() {
		case lineprotocol.Uint:
			fields[string(k)] = v.UintV()
		case lineprotocol.Int:
			fields[string(k)] = uint64(v.IntV())
		}
	}
	return fields, tags
}
