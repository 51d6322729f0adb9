package testbed

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// GPIOSimConfigfs is where gpio-sim chips are made
// (Documentation/admin-guide/gpio/gpio-sim.rst).
const GPIOSimConfigfs = "/sys/kernel/config/gpio-sim"

// GPIOSim is a gpio-sim chip with one bank, made for one test and removed
// after it. Its lines are inputs driven by pulling them up or down through
// sysfs, which the kernel sees as edges.
type GPIOSim struct {
	Chip string // gpiochipN
	dev  string // gpio-sim.N
}

var simSeq atomic.Int32

// NewGPIOSim makes a gpio-sim chip with the given number of lines, or skips
// the test where gpio-sim cannot be used (the QEMU rig's amd64 guest has it).
func NewGPIOSim(t testing.TB, lines int) *GPIOSim {
	t.Helper()
	if _, err := os.Stat(GPIOSimConfigfs); err != nil {
		t.Skipf("no gpio-sim chip can be made here: %v (needs the gpio-sim module, configfs and root; the rig's amd64 guest has them)", err)
	}
	dir := filepath.Join(GPIOSimConfigfs, fmt.Sprintf("tb-%d-%d", os.Getpid(), simSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, os.ErrPermission) {
			t.Skipf("gpio-sim present but not writable: %v", err)
		}
		t.Fatal(err)
	}
	bank := filepath.Join(dir, "bank0")
	t.Cleanup(func() {
		os.WriteFile(filepath.Join(dir, "live"), []byte("0"), 0)
		os.Remove(bank)
		os.Remove(dir)
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(bank, 0o755))
	must(os.WriteFile(filepath.Join(bank, "num_lines"), []byte(fmt.Sprint(lines)), 0))
	must(os.WriteFile(filepath.Join(dir, "live"), []byte("1"), 0))
	read := func(p string) string {
		b, err := os.ReadFile(p)
		must(err)
		return strings.TrimSpace(string(b))
	}
	return &GPIOSim{Chip: read(filepath.Join(bank, "chip_name")), dev: read(filepath.Join(dir, "dev_name"))}
}

// Path is the chip's character device.
func (s *GPIOSim) Path() string { return "/dev/" + s.Chip }

// Pull drives a line: up gives a rising edge from low.
func (s *GPIOSim) Pull(t testing.TB, line int, up bool) {
	t.Helper()
	v := "pull-down"
	if up {
		v = "pull-up"
	}
	if err := os.WriteFile(s.PullPath(line), []byte(v), 0); err != nil {
		t.Fatal(err)
	}
}

// PullPath is the sysfs attribute that drives a line ("pull-up",
// "pull-down"), for a generator that keeps it open.
func (s *GPIOSim) PullPath(line int) string {
	return fmt.Sprintf("/sys/devices/platform/%s/%s/sim_gpio%d/pull", s.dev, s.Chip, line)
}
