package gpio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The PPS ioctls are declared with a pointer as their size argument
// (_IOR('p', 0xa1, int *) etc.), so the number holds sizeof(void *): 4 on
// 32-bit ARM, 8 on amd64 and arm64. ppsIoctl encodes them the asm-generic
// way (arm, arm64, amd64, 386, riscv64); the layout test checks the result
// against x/sys for the GOARCH it runs on and against both literal values.
const (
	ptrSize           = unsafe.Sizeof(uintptr(0))
	ioctlPPSGetParams = uint(iocRead<<30 | ptrSize<<16 | 'p'<<8 | 0xa1)
	ioctlPPSGetCap    = uint(iocRead<<30 | ptrSize<<16 | 'p'<<8 | 0xa3)
	ioctlPPSFetch     = uint((iocRead|iocWrite)<<30 | ptrSize<<16 | 'p'<<8 | 0xa4)
	iocWrite          = 1
	iocRead           = 2
)

// PPSDevice is an open /dev/ppsN.
type PPSDevice struct {
	path string
	f    *os.File
	dev  ioctler
	info PPSInfo
	tr   PPSTracker
	buf  [PPSFDataSize]byte // pps_fdata, filled by PPS_FETCH
}

// OpenPPS opens a PPS device, "/dev/ppsN" or "ppsN", reads its caps and
// parameters and checks that it captures the edges cfg needs. Errors name
// the device and the reason: no such device, permission denied, not a PPS
// device (ENOTTY), an edge not captured (wrapping ErrUnsupported).
func OpenPPS(path string, cfg PPSConfig) (*PPSDevice, error) {
	if !strings.ContainsRune(path, '/') {
		path = filepath.Join("/dev", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("pps %s: no such device: %w", path, err)
		case errors.Is(err, fs.ErrPermission):
			return nil, fmt.Errorf("pps %s: permission denied (root, or a udev rule giving the agent's group read access): %w", path, err)
		}
		return nil, fmt.Errorf("pps %s: %w", path, err)
	}
	d, err := newPPSDevice(path, fileIoctl{f.Fd()}, cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	d.f = f
	return d, nil
}

func newPPSDevice(path string, dev ioctler, cfg PPSConfig) (*PPSDevice, error) {
	d := &PPSDevice{path: path, dev: dev, info: PPSInfo{Path: path}}
	var caps int32
	if err := dev.ioctl(ioctlPPSGetCap, unsafe.Pointer(&caps)); err != nil {
		return nil, d.ioctlError("PPS_GETCAP", err)
	}
	var kp [ppsKParamSize]byte
	if err := dev.ioctl(ioctlPPSGetParams, unsafe.Pointer(&kp[0])); err != nil {
		return nil, d.ioctlError("PPS_GETPARAMS", err)
	}
	d.info.Caps = PPSMode(caps)
	d.info.Mode = PPSMode(binary.NativeEndian.Uint32(kp[kpMode:]))
	d.info.APIVersion = int(int32(binary.NativeEndian.Uint32(kp[kpAPIVersion:])))
	if err := checkPPS(path, d.info, cfg); err != nil {
		return nil, err
	}
	return d, nil
}

// checkPPS says why a device cannot serve cfg.
func checkPPS(path string, in PPSInfo, cfg PPSConfig) error {
	if in.Caps&PPSCanWait == 0 {
		return fmt.Errorf("pps %s: the device cannot wait for an edge (caps %s lack can_wait): %w", path, in.Caps, ErrUnsupported)
	}
	for _, e := range []struct {
		need bool
		bit  PPSMode
		name string
	}{{cfg.Assert, PPSCaptureAssert, "assert"}, {cfg.Clear, PPSCaptureClear, "clear"}} {
		switch {
		case !e.need:
		case in.Caps&e.bit == 0:
			return fmt.Errorf("pps %s: no %s capture: the device cannot capture %s edges (caps %s): %w", path, e.name, e.name, in.Caps, ErrUnsupported)
		case in.Mode&e.bit == 0:
			return fmt.Errorf("pps %s: no %s capture: the device can, but its mode (%s) does not capture %s edges; PPS_SETPARAMS (root, e.g. ppsctl, or the driver's capture-clear option) enables it: %w",
				path, e.name, in.Mode, e.name, ErrUnsupported)
		}
	}
	return nil
}

func (d *PPSDevice) ioctlError(name string, err error) error {
	switch {
	case errors.Is(err, unix.ENOTTY):
		return fmt.Errorf("pps %s: %s: not a PPS device: %w", d.path, name, err)
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("pps %s: %s: ioctl not implemented (an emulator without PPS ioctls?): %w", d.path, name, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("pps %s: %s: permission denied: %w", d.path, name, err)
	}
	return fmt.Errorf("pps %s: %s: %w", d.path, name, err)
}

// Path is the device node.
func (d *PPSDevice) Path() string { return d.path }

// Info is the device's caps and mode, read at open.
func (d *PPSDevice) Info() PPSInfo { return d.info }

// Tracker is the device's edge accounting since the first Fetch.
func (d *PPSDevice) Tracker() *PPSTracker { return &d.tr }

// Close closes the device.
func (d *PPSDevice) Close() error {
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}

// fetch is one PPS_FETCH that waits at most wait (0: returns at once with
// the latest edges).
func (d *PPSDevice) fetch(wait time.Duration) (PPSEvent, error) {
	clear(d.buf[:])
	putKtime(d.buf[fdTimeout:], int64(wait))
	if err := d.dev.ioctl(ioctlPPSFetch, unsafe.Pointer(&d.buf[0])); err != nil {
		return PPSEvent{}, err
	}
	e, err := DecodePPSKInfo(d.buf[:PPSKInfoSize])
	if err != nil {
		return PPSEvent{}, fmt.Errorf("pps %s: PPS_FETCH: %w", d.path, err)
	}
	return e, nil
}

// Fetch waits until the device stamps a new assert or clear edge, or ctx is
// done, and returns the device's latest edges with NewAssert and NewClear
// saying which are new, and how many edges (both kinds) were stamped but
// never fetched since the previous Fetch. The first Fetch takes the edges
// already stamped as its baseline and waits for the next. Each PPS_FETCH
// waits at most 100 ms, so a cancelled ctx is seen within about that; after
// each wait that timed out a zero-timeout fetch catches an edge stamped
// between two waits. (One stamped in the microseconds between that look and
// the next wait is returned with the following edge and counted as lost: the
// kernel's PPS_FETCH waits for an edge after the call, never for one after a
// given sequence number.) It returns ctx.Err() when ctx is done. It does not
// allocate.
func (d *PPSDevice) Fetch(ctx context.Context) (PPSEvent, uint64, error) {
	if !d.tr.seen {
		e, err := d.fetch(0)
		if err != nil {
			return PPSEvent{}, 0, d.fetchError(err)
		}
		d.tr.Baseline(&e)
	}
	// zero: look without waiting first, and again after every wait that
	// timed out, so that an edge stamped between two waits is returned at
	// once rather than with the next one.
	for zero := true; ; {
		if err := ctx.Err(); err != nil {
			return PPSEvent{}, 0, err
		}
		wait := pollInterval
		if dl, ok := ctx.Deadline(); ok {
			wait = min(wait, time.Until(dl))
		}
		if zero {
			wait = 0
		}
		e, err := d.fetch(max(wait, 0))
		switch {
		case err == nil:
		case errors.Is(err, unix.ETIMEDOUT), errors.Is(err, unix.EINTR):
			zero = true
			continue
		default:
			return PPSEvent{}, 0, d.fetchError(err)
		}
		zero = false
		d.tr.Observe(&e)
		if e.NewAssert || e.NewClear {
			return e, e.LostAssert + e.LostClear, nil
		}
	}
}

func (d *PPSDevice) fetchError(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return d.ioctlError("PPS_FETCH", err)
	}
	return err
}
