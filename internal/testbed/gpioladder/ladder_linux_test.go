package gpioladder

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/warthog618/go-gpiocdev"
	"github.com/warthog618/go-gpiocdev/uapi"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/internal/testbed"
)

const simConfigfs = "/sys/kernel/config/gpio-sim"

// sim is one gpio-sim chip with one line.
type sim struct {
	chip string // gpiochipN
	pull *os.File
}

func newSim(t *testing.T) *sim {
	t.Helper()
	if _, err := os.Stat(simConfigfs); err != nil {
		t.Skipf("no gpio-sim here: %v (the rig's amd64 guest has it)", err)
	}
	dir := filepath.Join(simConfigfs, fmt.Sprintf("ladder-%d", os.Getpid()))
	bank := filepath.Join(dir, "bank0")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(dir, "live"), []byte("0"), 0)
		os.Remove(bank)
		os.Remove(dir)
	})
	must(os.Mkdir(bank, 0o755))
	must(os.WriteFile(filepath.Join(bank, "num_lines"), []byte("1"), 0))
	must(os.WriteFile(filepath.Join(dir, "live"), []byte("1"), 0))
	read := func(p string) string {
		b, err := os.ReadFile(p)
		must(err)
		return strings.TrimSpace(string(b))
	}
	s := &sim{chip: read(filepath.Join(bank, "chip_name"))}
	f, err := os.OpenFile(fmt.Sprintf("/sys/devices/platform/%s/%s/sim_gpio0/pull", read(filepath.Join(dir, "dev_name")), s.chip), os.O_WRONLY, 0)
	must(err)
	t.Cleanup(func() { f.Close() })
	s.pull = f
	return s
}

var levels = [2][]byte{[]byte("pull-down"), []byte("pull-up")}

// edges makes n edges (up, down, ...) paced at rate per second (0: as fast
// as sysfs takes them) and returns the rate achieved. The line starts low.
// The generator runs on a thread of its own, on genCPU if pin.
func (s *sim) edges(n int, rate float64, pin bool) (float64, error) {
	type result struct {
		made float64
		err  error
	}
	done := make(chan result)
	go func() {
		// Never unlocked: the thread, maybe pinned, ends with the goroutine.
		runtime.LockOSThread()
		if pin {
			if err := unix.SchedSetaffinity(0, cpuSet(genCPU)); err != nil {
				done <- result{err: fmt.Errorf("pinning the generator: %w", err)}
				return
			}
		}
		start := time.Now()
		for i := range n {
			if rate > 0 {
				// Sleep most of the wait (a busy generator would starve the
				// kernel's IRQ thread of CPU), spin the rest.
				due := start.Add(time.Duration(float64(i) / rate * 1e9))
				if d := time.Until(due); d > 300*time.Microsecond {
					time.Sleep(d - 200*time.Microsecond)
				}
				for time.Now().Before(due) {
				}
			}
			if _, err := s.pull.WriteAt(levels[(i+1)%2], 0); err != nil {
				done <- result{err: err}
				return
			}
		}
		done <- result{made: float64(n) / time.Since(start).Seconds()}
	}()
	r := <-done
	return r.made, r.err
}

// irqs is the count of the line's interrupts: the edges the kernel saw (the
// IRQ is released with the request, so it is read while the line is held).
func irqs(t *testing.T, label string) (uint64, bool) {
	t.Helper()
	n, err := testbed.IRQCount(label)
	if err != nil {
		b, _ := os.ReadFile("/proc/interrupts")
		t.Logf("%v; the line's IRQs go uncounted:\n%s", err, b)
		return 0, false
	}
	return n, true
}

// consumer holds the line while edges are made and says what it saw.
type consumer struct {
	name  string
	label string // its consumer label, which names the line's IRQ
	start func(t *testing.T, chip string) (stop func() (received, counted, queued uint64))
	knows string // how it learns of lost edges
}

// quiet waits until a counter stops moving for 300 ms (or 10 s pass).
func quiet(n *atomic.Uint64) {
	last, since := n.Load(), time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if v := n.Load(); v != last {
			last, since = v, time.Now()
		} else if time.Since(since) > 300*time.Millisecond {
			return
		}
	}
}

func monagentReader(bufSize int) func(t *testing.T, chip string) func() (uint64, uint64, uint64) {
	return func(t *testing.T, chip string) func() (uint64, uint64, uint64) {
		c, err := gpio.Open(chip)
		if err != nil {
			t.Fatal(err)
		}
		req, err := c.RequestLines([]int{0}, gpio.LineConfig{Consumer: "monagent", Edge: gpio.DetectBoth, EventBufferSize: bufSize})
		if err != nil {
			t.Fatal(err)
		}
		rd := req.Reader(64)
		ctx, cancel := context.WithCancel(context.Background())
		var got, lost atomic.Uint64
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]gpio.Event, 64)
			for {
				n, l, err := rd.Read(ctx, buf)
				got.Add(uint64(n))
				lost.Add(l)
				if err != nil {
					return
				}
			}
		}()
		return func() (uint64, uint64, uint64) {
			quiet(&got)
			cancel()
			wg.Wait()
			req.Close()
			c.Close()
			var queued uint64
			for _, l := range rd.Loss().Lines(nil) {
				queued += l.Received + l.Lost
			}
			return got.Load(), lost.Load(), queued
		}
	}
}

// gpiocdevReader counts what go-gpiocdev delivers; it exposes the kernel's
// seqnos but counts nothing, so the gaps are counted here, as a user of it
// would have to.
func gpiocdevReader(t *testing.T, chip string) func() (uint64, uint64, uint64) {
	var got, gaps atomic.Uint64
	var last uint32 // written by go-gpiocdev's one watcher goroutine, read after Close
	l, err := gpiocdev.RequestLine(chip, 0, gpiocdev.WithBothEdges, gpiocdev.WithConsumer("go-gpiocdev"),
		gpiocdev.WithEventHandler(func(e gpiocdev.LineEvent) {
			got.Add(1)
			if e.LineSeqno > last+1 {
				gaps.Add(uint64(e.LineSeqno - last - 1))
			}
			last = e.LineSeqno
		}))
	if err != nil {
		t.Fatal(err)
	}
	return func() (uint64, uint64, uint64) {
		quiet(&got)
		l.Close()
		return got.Load(), gaps.Load(), uint64(last)
	}
}

// gpiocdevWatcher is go-gpiocdev's reader with the kernel queue monagent
// uses: v0.9.1's WithEventBufferSize never reaches the kernel (the option is
// stored and not copied into the request), so the line is requested through
// its uapi package with event_buffer_size 1024, and read as its watcher
// reads (watcher.go): epoll_wait, then one uapi.ReadLineEvent per wake-up.
// This tells the reader's cost apart from the queue's depth.
func gpiocdevWatcher(t *testing.T, chip string) func() (uint64, uint64, uint64) {
	f, err := os.Open(chip)
	if err != nil {
		t.Fatal(err)
	}
	req := uapi.LineRequest{Lines: 1, EventBufferSize: 1024,
		Config: uapi.LineConfig{Flags: uapi.LineFlagV2Input | uapi.LineFlagV2EdgeBoth}}
	copy(req.Consumer[:], "go-gpiocdev")
	if err := uapi.GetLine(f.Fd(), &req); err != nil {
		t.Fatal(err)
	}
	f.Close()
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	donefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int{donefd, int(req.Fd)} {
		if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}); err != nil {
			t.Fatal(err)
		}
	}
	var got, gaps atomic.Uint64
	var last uint32
	done := make(chan struct{})
	go func() {
		defer close(done)
		evs := make([]unix.EpollEvent, 2)
		for {
			n, err := unix.EpollWait(epfd, evs, -1)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			for _, ev := range evs[:n] {
				if ev.Fd == int32(donefd) {
					return
				}
				e, err := uapi.ReadLineEvent(uintptr(ev.Fd))
				if err != nil {
					continue
				}
				got.Add(1)
				if e.LineSeqno > last+1 {
					gaps.Add(uint64(e.LineSeqno - last - 1))
				}
				last = e.LineSeqno
			}
		}
	}()
	return func() (uint64, uint64, uint64) {
		quiet(&got)
		unix.Write(donefd, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		<-done
		unix.Close(epfd)
		unix.Close(donefd)
		unix.Close(int(req.Fd))
		return got.Load(), gaps.Load(), uint64(last)
	}
}

// gpiomonReader runs Debian's gpiomon and counts the lines it prints.
func gpiomonReader(t *testing.T, chip string) func() (uint64, uint64, uint64) {
	path, err := exec.LookPath("gpiomon")
	if err != nil {
		t.Skipf("no gpiomon: %v", err)
	}
	cmd := exec.Command(path, "-b", "-F", "%o %e %s.%n", chip, "0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if pinnable() {
		if err := unix.SchedSetaffinity(cmd.Process.Pid, cpuSet(consumerCPU)); err != nil {
			t.Fatalf("pinning gpiomon: %v", err)
		}
	}
	var got atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			got.Add(1)
		}
	}()
	// gpiomon prints nothing before its request is made: wait for the line
	// to be held.
	c, err := gpio.Open(chip)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if li, err := c.LineInfo(0); err == nil && li.Used() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("gpiomon never requested the line")
		}
	}
	return func() (uint64, uint64, uint64) {
		quiet(&got)
		cmd.Process.Kill()
		<-done
		cmd.Wait()
		return got.Load(), 0, 0 // uAPI v1 events carry no seqno
	}
}

// TestEdgeRateLadder: for each consumer, bursts of edges at rising rates.
// An edge can be lost in three places, and the table tells them apart:
// merged before the kernel queued it (the line's IRQ fired, but gpiolib-cdev
// makes one event per run of its IRQ thread, with contiguous seqnos: visible
// only as IRQs in /proc/interrupts beyond the last line seqno), dropped from
// the kernel's full queue (a seqno gap), or lost by the consumer. monagent's
// reader must account for every queued edge at every rate (received +
// counted lost = the last line seqno).
//
// With two CPUs the run is pinned (see genCPU): the generator, the hard IRQ
// and the IRQ thread on one CPU, the consumer alone on the other. Unpinned,
// the IRQ thread wakes on whichever CPU it last ran on, and under QEMU TCG
// that wake-up can take milliseconds, in which the kernel merges edges.
func TestEdgeRateLadder(t *testing.T) {
	s := newSim(t)
	const n = 2000
	rates := []float64{500, 1000, 1250, 1500, 2000, 3000, 5000, 10_000, 20_000, 0}
	consumers := []consumer{
		{"monagent (queue 1024)", "monagent", monagentReader(1024), "seqno gaps, counted"},
		{"monagent (queue 16)", "monagent", monagentReader(16), "seqno gaps, counted"},
		{"go-gpiocdev v0.9.1 (queue 16)", "go-gpiocdev", gpiocdevReader, "seqnos exposed, not counted"},
		{"go-gpiocdev v0.9.1's watcher loop (queue 1024)", "go-gpiocdev", gpiocdevWatcher, "seqnos exposed, not counted"},
		{"gpiomon (libgpiod 1.6)", "gpiomon", gpiomonReader, "cannot (uAPI v1, no seqno)"},
	}
	pin := pinnable()
	if pin {
		if err := pinProcess(consumerCPU); err != nil {
			t.Fatal(err)
		}
		t.Logf("pinned: generator, hard IRQ and IRQ thread on CPU %d; consumers on CPU %d", genCPU, consumerCPU)
	} else {
		t.Logf("one CPU: generator, IRQ thread and consumer share it")
	}
	// The generator alone: pulls of the line while nobody holds it (no IRQ).
	if made, err := s.edges(n, 0, pin); err == nil {
		t.Logf("generator alone (no IRQ): %.0f pulls/s", made)
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| consumer | target pulls/s | made pulls/s | pulls | line IRQs | queued (last line seqno) | received | counted lost (seqno gaps) | merged before queuing (IRQs − queued) | lost, not counted by the consumer |\n|---|---|---|---|---|---|---|---|---|---|\n")

	best, lossy := map[string]float64{}, map[string]bool{}
	for _, c := range consumers {
		for _, rate := range rates {
			stop := c.start(t, "/dev/"+s.chip)
			thread := 0
			if pin {
				// gpiomon's line is held a moment before its IRQ is requested.
				irq, err := irqNumber(c.label)
				for deadline := time.Now().Add(2 * time.Second); err != nil && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
					irq, err = irqNumber(c.label)
				}
				if err == nil {
					thread, err = pinIRQ(irq, genCPU)
				}
				if err != nil {
					t.Fatalf("%s: pinning the line's IRQ: %v", c.name, err)
				}
			}
			irq0, ok := irqs(t, c.label)
			made, err := s.edges(n, rate, pin)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond) // the last interrupt handled
			irq1, _ := irqs(t, c.label)
			if pin {
				if cpu := lastCPU(thread); cpu != genCPU {
					t.Errorf("%s: the IRQ thread last ran on CPU %d, not %d", c.name, cpu, genCPU)
				}
			}
			seen, irqCol := irq1-irq0, fmt.Sprint(irq1-irq0)
			if !ok {
				irqCol = "–"
			}
			got, counted, queued := stop()
			target := "max"
			if rate > 0 {
				target = fmt.Sprint(rate)
			}
			q, merged := "–", "–"
			if queued > 0 && ok {
				q, merged = fmt.Sprint(queued), fmt.Sprint(int64(seen)-int64(queued))
			}
			fmt.Fprintf(&table, "| %s | %s | %.0f | %d | %s | %s | %d | %d | %s | %d |\n", c.name, target, made, n, irqCol, q, got, counted, merged, int64(n)-int64(got)-int64(counted))
			// The consumer's threshold: every rung up to here lossless.
			if got != n {
				lossy[c.name] = true
			} else if !lossy[c.name] && best[c.name] < made {
				best[c.name] = made
			}
			if strings.HasPrefix(c.name, "monagent") && got+counted != queued {
				t.Errorf("%s at %.0f pulls/s: last line seqno %d, %d received, %d counted lost: %d unaccounted", c.name, made, queued, got, counted, int64(queued)-int64(got)-int64(counted))
			}
			// The line ends low (an even number of edges); let it settle.
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("edge-rate ladder, %d pulls per burst:\n%s", n, table.String())
	for _, c := range consumers {
		t.Logf("%s: every pull received at every rung up to %.0f pulls/s; learns of kernel-queue losses by: %s", c.name, best[c.name], c.knows)
	}
}
