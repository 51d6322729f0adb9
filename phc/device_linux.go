package phc

import (
	"bytes"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// Device is an open PHC character device.
type Device struct {
	path  string
	index int
	dev   ioctls
	caps  Caps
}

// Open opens /dev/ptpN read-only (enough for every measurement) and reads its
// capabilities.
func Open(path string) (*Device, error) {
	f, index, err := openPHC(path, os.O_RDONLY, "")
	if err != nil {
		return nil, err
	}
	d, err := newDevice(path, index, fileIoctls{f})
	if err != nil {
		f.Close()
		return nil, err
	}
	return d, nil
}

func newDevice(path string, index int, dev ioctls) (*Device, error) {
	caps, err := readCaps(path, dev)
	if err != nil {
		return nil, err
	}
	return &Device{path: path, index: index, dev: dev, caps: caps}, nil
}

// openPHC opens the PHC at path, which must name /dev/ptpN, with flag and
// returns it with N; an open error names path and, when not empty, what the
// device is opened for ("phc /dev/ptp0: extts: ...").
func openPHC(path string, flag int, what string) (*os.File, int, error) {
	index, err := indexFromPath(path)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if what != "" {
			return nil, 0, fmt.Errorf("phc %s: %s: %w", path, what, err)
		}
		return nil, 0, fmt.Errorf("phc %s: %w", path, err)
	}
	return f, index, nil
}

// capsIoctl is the one ioctl readCaps needs.
type capsIoctl interface {
	caps(*unix.PtpClockCaps) error
}

// readCaps reads the PHC's capabilities (PTP_CLOCK_GETCAPS).
func readCaps(path string, dev capsIoctl) (Caps, error) {
	var c unix.PtpClockCaps
	if err := dev.caps(&c); err != nil {
		return Caps{}, fmt.Errorf("phc %s: PTP_CLOCK_GETCAPS: %w", path, err)
	}
	return capsFromKernel(&c), nil
}

// Path is the device node.
func (d *Device) Path() string { return d.path }

// Domain is the clock domain of this PHC.
func (d *Device) Domain() timebase.Domain { return timebase.PHC(d.index) }

// Caps returns the capabilities read at Open.
func (d *Device) Caps() Caps { return d.caps }

// Clock returns the PHC as a clock (clock_gettime on its dynamic clock id). It is
// valid while the device is open.
func (d *Device) Clock() (timebase.DynamicClock, error) {
	x, ok := d.dev.(fileIoctls)
	if !ok {
		return timebase.DynamicClock{}, fmt.Errorf("phc %s: no file descriptor", d.path)
	}
	return timebase.NewDynamicClock(x.f.Fd(), d.Domain()), nil
}

// Pins reads the programmable pins' names and functions.
func (d *Device) Pins() ([]Pin, error) {
	pins := make([]Pin, 0, d.caps.Pins)
	for i := 0; i < d.caps.Pins; i++ {
		pd := unix.PtpPinDesc{Index: uint32(i)}
		if err := d.dev.pin(&pd); err != nil {
			return pins, fmt.Errorf("phc %s: PTP_PIN_GETFUNC %d: %w", d.path, i, err)
		}
		pins = append(pins, Pin{
			Name: string(pd.Name[:max(bytes.IndexByte(pd.Name[:], 0), 0)]), Index: int(pd.Index),
			Func: PinFunc(pd.Func), Channel: int(pd.Chan),
		})
	}
	return pins, nil
}

// NewSampler returns a sampler over this device taking samples reads per call
// (best of N; 9 is ptp4l's and phc2sys's default) with the preferred method.
func (d *Device) NewSampler(samples int, prefer Method) *Sampler {
	return newSampler(d.dev, d.caps, samples, prefer, func(c timebase.SystemClock) (int64, error) { return c.Now() })
}

// Close closes the device.
func (d *Device) Close() error { return d.dev.close() }

// fileIoctls issues the PTP ioctls on a file. Each tries the "2" request (strict
// reserved-field checks, Linux 5.8+) and falls back to the original on ENOTTY.
type fileIoctls struct{ f *os.File }

func (x fileIoctls) ioctl(req2, req1 uint, p unsafe.Pointer) error {
	fd := x.f.Fd()
	_, _, e := unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req2), uintptr(p))
	if e == unix.ENOTTY && req1 != 0 {
		_, _, e = unix.Syscall(unix.SYS_IOCTL, fd, uintptr(req1), uintptr(p))
	}
	if e != 0 {
		return e
	}
	return nil
}

func (x fileIoctls) caps(c *unix.PtpClockCaps) error {
	return x.ioctl(unix.PTP_CLOCK_GETCAPS2, unix.PTP_CLOCK_GETCAPS, unsafe.Pointer(c))
}

func (x fileIoctls) sysOffsetExtended(v *unix.PtpSysOffsetExtended) error {
	return classify("PTP_SYS_OFFSET_EXTENDED", x.ioctl(unix.PTP_SYS_OFFSET_EXTENDED2, unix.PTP_SYS_OFFSET_EXTENDED, unsafe.Pointer(v)))
}

func (x fileIoctls) sysOffset(v *unix.PtpSysOffset) error {
	return classify("PTP_SYS_OFFSET", x.ioctl(unix.PTP_SYS_OFFSET2, unix.PTP_SYS_OFFSET, unsafe.Pointer(v)))
}

func (x fileIoctls) sysOffsetPrecise(v *unix.PtpSysOffsetPrecise) error {
	return classify("PTP_SYS_OFFSET_PRECISE", x.ioctl(unix.PTP_SYS_OFFSET_PRECISE2, unix.PTP_SYS_OFFSET_PRECISE, unsafe.Pointer(v)))
}

func (x fileIoctls) pin(v *unix.PtpPinDesc) error {
	return x.ioctl(unix.PTP_PIN_GETFUNC2, unix.PTP_PIN_GETFUNC, unsafe.Pointer(v))
}

func (x fileIoctls) close() error { return x.f.Close() }
