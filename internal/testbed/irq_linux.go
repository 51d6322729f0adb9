package testbed

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IRQCount sums, over every CPU, the interrupts /proc/interrupts lists for
// the IRQ named name (gpiolib-cdev names a line's IRQ after the request's
// consumer). For a GPIO line these are the edges the kernel saw: gpio-sim,
// like a real interrupt controller, merges edges that come faster than its
// interrupt is handled into one, so they can be fewer than the pulls that
// made them.
func IRQCount(name string) (uint64, error) {
	_, n, err := findIRQ(func(_ int, label string) bool { return label == name })
	if err != nil {
		return 0, fmt.Errorf("%w named %q", err, name)
	}
	return n, nil
}

// IRQNamed finds the IRQ whose name starts with prefix (an IIO consumer's,
// "adc_consumer0") and returns its number and count.
func IRQNamed(prefix string) (num int, count uint64, err error) {
	num, count, err = findIRQ(func(_ int, label string) bool { return strings.HasPrefix(label, prefix) })
	if err != nil {
		return 0, 0, fmt.Errorf("%w named %q...", err, prefix)
	}
	return num, count, nil
}

// IRQCountOf is the count of IRQ num; an IRQ keeps it, listed without a
// name, after its handler is freed (an IIO buffer disabled, a line released).
func IRQCountOf(num int) (uint64, error) {
	_, n, err := findIRQ(func(i int, _ string) bool { return i == num })
	if err != nil {
		return 0, fmt.Errorf("%w numbered %d", err, num)
	}
	return n, nil
}

// findIRQ sums the per-CPU counts of the first numbered IRQ that match
// accepts (by number and its line's last word, the handler's name).
func findIRQ(match func(num int, name string) bool) (int, uint64, error) {
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, 0, err
	}
	lines := strings.Split(string(b), "\n")
	cpus := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < cpus+1 {
			continue
		}
		num, err := strconv.Atoi(strings.TrimSuffix(f[0], ":"))
		if err != nil || !match(num, f[len(f)-1]) {
			continue // ARM's IPI0..., x86's NMI...: not numbered
		}
		var n uint64
		for _, c := range f[1 : 1+cpus] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				return 0, 0, fmt.Errorf("/proc/interrupts: %q: %w", l, err)
			}
			n += v
		}
		return num, n, nil
	}
	return 0, 0, fmt.Errorf("/proc/interrupts has no IRQ")
}
