package timebase

import (
	"errors"
	"time"
)

// Clock is anything that tells the time in one domain.
type Clock interface {
	// Now returns the current time of the clock in nanoseconds.
	Now() (int64, error)
	// Domain is the clock domain Now counts in.
	Domain() Domain
}

// ErrNotSupported is returned on systems without the clock interfaces of Linux.
var ErrNotSupported = errors.New("not supported on this operating system")

// SystemClock is one of the kernel's POSIX clocks.
type SystemClock struct {
	id     int32
	domain Domain
}

// Clock ids of clock_gettime(2); identical on every Linux architecture.
const (
	clockRealtime     = 0
	clockMonotonic    = 1
	clockMonotonicRaw = 4
	clockBoottime     = 7
	clockTAI          = 11
)

// The system clocks.
var (
	Realtime     = SystemClock{clockRealtime, DomainRealtime}
	Monotonic    = SystemClock{clockMonotonic, DomainMonotonic}
	MonotonicRaw = SystemClock{clockMonotonicRaw, DomainMonotonicRaw}
	Boottime     = SystemClock{clockBoottime, DomainBoottime}
	TAI          = SystemClock{clockTAI, DomainTAI}
)

// SystemClocks lists the system clocks in a fixed order.
func SystemClocks() []SystemClock {
	return []SystemClock{Realtime, TAI, Monotonic, MonotonicRaw, Boottime}
}

// SystemClockFor returns the system clock of a domain.
func SystemClockFor(d Domain) (SystemClock, bool) {
	for _, c := range SystemClocks() {
		if c.domain == d {
			return c, true
		}
	}
	return SystemClock{}, false
}

// Domain implements Clock.
func (c SystemClock) Domain() Domain { return c.domain }

// ID is the clockid_t of the clock.
func (c SystemClock) ID() int32 { return c.id }

// Now implements Clock. REALTIME is read through the Go runtime's vDSO path
// (time.Now), about ten times cheaper than the clock_gettime system call the
// other clocks need.
func (c SystemClock) Now() (int64, error) {
	if c.id == clockRealtime {
		return time.Now().UnixNano(), nil
	}
	return clockGettime(c.id)
}

// Resolution returns the clock's resolution as clock_getres(2) reports it.
func (c SystemClock) Resolution() (int64, error) { return clockGetres(c.id) }

// DynamicClock is a clock known by a dynamic clock id, such as a PHC opened as a
// file (FD_TO_CLOCKID in clock_gettime(2)).
type DynamicClock struct {
	id     int32
	domain Domain
}

// NewDynamicClock returns the clock of an open PHC character device descriptor.
// The descriptor must stay open while the clock is used.
func NewDynamicClock(fd uintptr, domain Domain) DynamicClock {
	return DynamicClock{id: fdToClockID(int(fd)), domain: domain}
}

// Domain implements Clock.
func (c DynamicClock) Domain() Domain { return c.domain }

// ID is the dynamic clockid_t.
func (c DynamicClock) ID() int32 { return c.id }

// Now implements Clock.
func (c DynamicClock) Now() (int64, error) { return clockGettime(c.id) }

// Resolution returns the clock's resolution as clock_getres(2) reports it.
func (c DynamicClock) Resolution() (int64, error) { return clockGetres(c.id) }

// fdToClockID is FD_TO_CLOCKID of the kernel's uapi: ((~fd) << 3) | CLOCKFD.
func fdToClockID(fd int) int32 { return int32((^fd)<<3 | 3) }

// RealtimeNS is CLOCK_REALTIME now, in ns: Realtime.Now without its error,
// which is always nil (the Go runtime's vDSO read, time.Now, has none to
// give). For the read and ship times of records.
func RealtimeNS() int64 { return time.Now().UnixNano() }

// MonotonicRawNS is CLOCK_MONOTONIC_RAW now, in ns. clock_gettime fails only
// for a clock id the kernel does not know or a bad pointer: every Linux since
// 2.6.28 has this clock and the pointer is ours, so a failure is a broken
// system, reported by a panic rather than a silent zero time.
func MonotonicRawNS() int64 {
	t, err := MonotonicRaw.Now()
	if err != nil {
		panic("timebase: CLOCK_MONOTONIC_RAW failed: " + err.Error())
	}
	return t
}
