package timeapi

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"github.com/monagent/monagent/timebase"
)

// rawClock reads CLOCK_MONOTONIC_RAW through the kernel's vDSO (tens of
// nanoseconds, no system call) when this process has one that answers for
// it, else with the clock_gettime system call.
func rawClock() timebase.Clock {
	if c, err := newVDSOClock(clockMonotonicRaw); err == nil {
		return c
	}
	return timebase.MonotonicRaw
}

// realtimeClock reads CLOCK_REALTIME (Past's REALTIME stamps) the same way:
// one vDSO call, where time.Now makes two.
func realtimeClock() timebase.Clock {
	if c, err := newVDSOClock(clockRealtime); err == nil {
		return c
	}
	return timebase.Realtime
}

// monotonicClock reads CLOCK_MONOTONIC (Past's MONOTONIC stamps) the same way.
func monotonicClock() timebase.Clock {
	if c, err := newVDSOClock(clockMonotonic); err == nil {
		return c
	}
	return timebase.Monotonic
}

const (
	clockRealtime     = 0
	clockMonotonic    = 1
	clockMonotonicRaw = 4
	atSysinfoEHDR     = 33 // AT_SYSINFO_EHDR: the vDSO's address, getauxval(3)
)

type vdsoTimespec struct{ sec, nsec int64 }

// vdsoGettime calls the vDSO's clock_gettime at fn (vdso_linux_amd64.s).
//
//go:noescape
func vdsoGettime(fn uintptr, clock int32, ts *vdsoTimespec) int32

// vdsoClock is a kernel clock read through the vDSO.
type vdsoClock struct {
	fn    uintptr
	clock int32
}

func (c vdsoClock) Now() (int64, error) {
	var ts vdsoTimespec
	if e := vdsoGettime(c.fn, c.clock, &ts); e != 0 {
		return 0, fmt.Errorf("vDSO clock_gettime(%d): errno %d", c.clock, -e)
	}
	return ts.sec*1_000_000_000 + ts.nsec, nil
}

func (c vdsoClock) Domain() timebase.Domain { return c.system().Domain() }

// system is the same clock read by the system call.
func (c vdsoClock) system() timebase.SystemClock {
	switch c.clock {
	case clockRealtime:
		return timebase.Realtime
	case clockMonotonic:
		return timebase.Monotonic
	}
	return timebase.MonotonicRaw
}

// newVDSOClock finds __vdso_clock_gettime in this process's vDSO (its address
// from /proc/self/auxv, its image from /proc/self/mem, so no pointer is made
// from an integer) and checks one read against the system call.
func newVDSOClock(clock int32) (vdsoClock, error) {
	base, err := vdsoBase()
	if err != nil {
		return vdsoClock{}, err
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return vdsoClock{}, err
	}
	defer mem.Close()
	var hdr [64]byte
	if _, err := mem.ReadAt(hdr[:], int64(base)); err != nil {
		return vdsoClock{}, fmt.Errorf("vDSO header: %w", err)
	}
	le := binary.LittleEndian
	shoff, shentsize, shnum := le.Uint64(hdr[0x28:]), le.Uint16(hdr[0x3a:]), le.Uint16(hdr[0x3c:])
	size := shoff + uint64(shentsize)*uint64(shnum)
	if size > 1<<20 || size < 64 {
		return vdsoClock{}, fmt.Errorf("vDSO of %d bytes", size)
	}
	img := make([]byte, size)
	if _, err := mem.ReadAt(img, int64(base)); err != nil {
		return vdsoClock{}, fmt.Errorf("vDSO image: %w", err)
	}
	f, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return vdsoClock{}, fmt.Errorf("vDSO: %w", err)
	}
	load := ^uint64(0)
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Vaddr < load {
			load = p.Vaddr
		}
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return vdsoClock{}, fmt.Errorf("vDSO symbols: %w", err)
	}
	for _, s := range syms {
		if s.Name != "__vdso_clock_gettime" || elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value < load || s.Value-load >= size {
			continue
		}
		c := vdsoClock{fn: base + uintptr(s.Value-load), clock: clock}
		return c, c.check()
	}
	return vdsoClock{}, errors.New("vDSO has no __vdso_clock_gettime")
}

// check brackets one vDSO read between two system calls.
func (c vdsoClock) check() error {
	sys := c.system()
	a, err := sys.Now()
	if err != nil {
		return err
	}
	v, err := c.Now()
	if err != nil {
		return err
	}
	b, err := sys.Now()
	if err != nil {
		return err
	}
	if v < a || v > b {
		return fmt.Errorf("vDSO clock %d read %d outside the system call's [%d, %d]", c.clock, v, a, b)
	}
	return nil
}

func vdsoBase() (uintptr, error) {
	auxv, err := os.ReadFile("/proc/self/auxv")
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(auxv); i += 16 {
		if k := binary.LittleEndian.Uint64(auxv[i:]); k == atSysinfoEHDR {
			return uintptr(binary.LittleEndian.Uint64(auxv[i+8:])), nil
		} else if k == 0 {
			break
		}
	}
	return 0, errors.New("no vDSO in the auxiliary vector")
}
