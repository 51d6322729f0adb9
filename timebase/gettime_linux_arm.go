package timebase

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelTimespec is the kernel's __kernel_timespec: 64-bit seconds on 32-bit
// ARM too.
type kernelTimespec struct {
	Sec  int64
	Nsec int64
}

// clockGettime reads a clock with clock_gettime64 (Linux 5.1+), whose seconds
// do not overflow in January 2038. On an older kernel it falls back to
// clock_gettime, whose 32-bit seconds are checked by seconds32.
func clockGettime(id int32) (int64, error) {
	var ts kernelTimespec
	_, _, e := unix.Syscall(unix.SYS_CLOCK_GETTIME64, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	if e == 0 {
		return ts.Sec*1_000_000_000 + ts.Nsec, nil
	}
	if e != unix.ENOSYS {
		return 0, fmt.Errorf("clock_gettime64(%d): %w", id, e)
	}
	var old unix.Timespec
	if err := unix.ClockGettime(id, &old); err != nil {
		// EOVERFLOW here is the 2038 problem of a kernel without time64.
		return 0, fmt.Errorf("clock_gettime(%d): %w", id, err)
	}
	return seconds32(id, int32(old.Sec), int32(old.Nsec))
}

// errTime32 is a 32-bit time that wrapped (after 2038-01-19T03:14:07Z).
var errTime32 = errors.New("32-bit time_t overflowed (2038): this kernel lacks clock_gettime64")

// seconds32 converts a 32-bit timespec. REALTIME, TAI and PHCs (dynamic
// clocks, negative ids) count from 1970 and are never before it, so negative
// seconds there are a wrapped time_t, which is refused rather than shipped as
// 1901; the monotonic clocks count from boot.
func seconds32(id int32, sec, nsec int32) (int64, error) {
	if sec < 0 && (id == unix.CLOCK_REALTIME || id == unix.CLOCK_TAI || id < 0) {
		return 0, fmt.Errorf("clock_gettime(%d): %w", id, errTime32)
	}
	return int64(sec)*1_000_000_000 + int64(nsec), nil
}
