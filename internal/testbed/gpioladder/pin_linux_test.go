package gpioladder

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The CPUs of a pinned run: the generator, the hard IRQ (gpio-sim raises it
// with an irq_work on the CPU that writes the pull) and the line's IRQ thread
// on genCPU, every other thread of the test (the consumers) and gpiomon on
// consumerCPU. The IRQ thread (SCHED_FIFO) is then woken on the CPU that
// took the hard IRQ and runs when the generator returns from its write,
// before the next pull: the kernel queues every edge, and the consumer, on
// a CPU of its own, is what the ladder measures. Unpinned, the thread is
// woken on the CPU it last ran on; under QEMU TCG on a busy host reaching
// the other vCPU can take milliseconds, and the edges in between merge.
const (
	genCPU      = 0
	consumerCPU = 1
)

func cpuSet(cpu int) *unix.CPUSet {
	var s unix.CPUSet
	s.Set(cpu)
	return &s
}

// pinnable says whether the guest has the two CPUs a pinned run needs.
func pinnable() bool { return runtime.NumCPU() >= 2 }

// pinProcess puts every thread of this process on cpu (threads made later
// inherit their maker's set).
func pinProcess(cpu int) error {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, cpuSet(cpu)); err != nil && err != unix.ESRCH {
			return fmt.Errorf("sched_setaffinity thread %d: %w", tid, err)
		}
	}
	return nil
}

// irqNumber is the number of the IRQ /proc/interrupts names label.
func irqNumber(label string) (int, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[len(f)-1] != label {
			continue
		}
		return strconv.Atoi(strings.TrimSuffix(f[0], ":"))
	}
	return 0, fmt.Errorf("/proc/interrupts has no IRQ named %q", label)
}

// pinIRQ puts IRQ irq and its thread ("irq/N-label", found by its comm) on
// cpu. gpio-sim's irq_sim chip cannot move its hard IRQ (the write to
// smp_affinity fails); it runs where the pull is written anyway.
func pinIRQ(irq, cpu int) (thread int, err error) {
	os.WriteFile(fmt.Sprintf("/proc/irq/%d/smp_affinity_list", irq), []byte(strconv.Itoa(cpu)), 0)
	prefix := fmt.Sprintf("irq/%d-", irq)
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || !strings.HasPrefix(string(comm), prefix) {
			continue
		}
		if err := unix.SchedSetaffinity(pid, cpuSet(cpu)); err != nil {
			return 0, fmt.Errorf("sched_setaffinity %s (pid %d): %w", strings.TrimSpace(string(comm)), pid, err)
		}
		return pid, nil
	}
	return 0, fmt.Errorf("no thread %s* for IRQ %d", prefix, irq)
}

// lastCPU is the CPU task pid last ran on (/proc/PID/stat field 39).
func lastCPU(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 37 {
		return -1
	}
	n, err := strconv.Atoi(f[36])
	if err != nil {
		return -1
	}
	return n
}
