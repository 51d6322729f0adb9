package gpio

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// IRQ is one numbered row of /proc/interrupts: the interrupts handled, over
// every CPU, the interrupt chip, the hardware IRQ number in the chip's domain
// and the names of the handlers. gpiolib-cdev names a requested line's IRQ
// after the request's consumer, and for GPIO interrupt chips the hardware
// IRQ is the line's offset.
//
// A line's IRQ count is the edges the kernel saw. gpiolib-cdev stamps an
// edge in the hard IRQ handler but queues its event from the IRQ's thread;
// IRQs that fire before the thread runs become one event, and for a
// one-line request its seqnos stay contiguous. Those edges show in no seqno:
// only as IRQs beyond the line's last seqno.
type IRQ struct {
	Number int
	Count  uint64
	Chip   string
	HWIRQ  string
	Names  []string
}

// ParseInterrupts parses /proc/interrupts. Rows not numbered (NMI, LOC and
// the like) are skipped. A numbered row whose counts are not numbers is an
// error naming the row.
func ParseInterrupts(b []byte) ([]IRQ, error) {
	lines := bytes.Split(b, []byte("\n"))
	cpus := len(bytes.Fields(lines[0]))
	if cpus == 0 || !bytes.HasPrefix(bytes.TrimSpace(lines[0]), []byte("CPU")) {
		return nil, fmt.Errorf("/proc/interrupts: header %q does not list CPUs", firstN(lines[0], 60))
	}
	var out []IRQ
	for i, l := range lines[1:] {
		f := strings.Fields(string(l))
		if len(f) == 0 {
			continue
		}
		num, ok := strings.CutSuffix(f[0], ":")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			continue // NMI:, LOC:, ERR: ...
		}
		if len(f) < 1+cpus {
			return nil, fmt.Errorf("/proc/interrupts line %d (IRQ %d): %d counts for %d CPUs", i+2, n, len(f)-1, cpus)
		}
		irq := IRQ{Number: n}
		for _, c := range f[1 : 1+cpus] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/interrupts line %d (IRQ %d): count %q: %w", i+2, n, firstN([]byte(c), 30), err)
			}
			irq.Count += v
		}
		rest := f[1+cpus:]
		if len(rest) > 0 {
			irq.Chip, rest = rest[0], rest[1:]
		}
		if len(rest) > 0 && isDigits(rest[0]) {
			irq.HWIRQ, rest = rest[0], rest[1:]
		}
		if len(rest) > 0 && (rest[0] == "Edge" || rest[0] == "Level") {
			rest = rest[1:] // CONFIG_GENERIC_IRQ_SHOW_LEVEL
		}
		if len(rest) > 0 {
			for _, name := range strings.Split(strings.Join(rest, " "), ",") {
				if name = strings.TrimSpace(name); name != "" {
					irq.Names = append(irq.Names, name)
				}
			}
		}
		out = append(out, irq)
	}
	return out, nil
}

// LineIRQCounts finds the IRQ of each of a request's lines, by the
// request's consumer and the line's offset as hardware IRQ, and returns
// their counts by offset. A line with no such row is absent; a line with
// more than one is an error (another request with the same consumer on
// another chip).
func LineIRQCounts(irqs []IRQ, consumer string, offsets []int) (map[int]uint64, error) {
	out := make(map[int]uint64, len(offsets))
	for _, o := range offsets {
		hw := strconv.Itoa(o)
		found := 0
		for i := range irqs {
			if irqs[i].HWIRQ != hw || !containsName(irqs[i].Names, consumer) {
				continue
			}
			found++
			out[o] = irqs[i].Count
		}
		if found > 1 {
			return nil, fmt.Errorf("/proc/interrupts: %d IRQs named %q with hardware IRQ %d: cannot tell line %d's apart", found, consumer, o, o)
		}
	}
	return out, nil
}

func containsName(names []string, n string) bool {
	for _, x := range names {
		if x == n {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func firstN(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}
