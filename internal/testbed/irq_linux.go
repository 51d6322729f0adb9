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
	b, err := os.ReadFile("/proc/interrupts")
	if err != nil {
		return 0, err
	}
	lines := strings.Split(string(b), "\n")
	cpus := len(strings.Fields(lines[0]))
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < cpus+2 || f[len(f)-1] != name {
			continue
		}
		var n uint64
		for _, c := range f[1 : 1+cpus] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/interrupts: %q: %w", l, err)
			}
			n += v
		}
		return n, nil
	}
	return 0, fmt.Errorf("/proc/interrupts has no IRQ named %q", name)
}
