//go:build linux

package phc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// exttsPollMS bounds each wait for events, so Read sees a cancelled context
// within about this long.
const exttsPollMS = 100

// exttsBufEvents is the size of a reader's buffer in events; the kernel returns
// at most KernelExttsPerRead per read.
const exttsBufEvents = 64

// exttsIoctls are the ioctls an extts set-up issues: exttsFile on the device,
// a fake in tests.
type exttsIoctls interface {
	caps(c *unix.PtpClockCaps) error
	pinGet(p *unix.PtpPinDesc) error
	pinSet(p *unix.PtpPinDesc) error
	// extts issues PTP_EXTTS_REQUEST2 (v2) or the original PTP_EXTTS_REQUEST.
	extts(r *unix.PtpExttsRequest, v2 bool) error
	// mask lets only these channels into this file's queue (PTP_MASK_CLEAR_ALL,
	// PTP_MASK_EN_SINGLE; Linux 6.7+, ENOTTY before).
	mask(channels []ExttsChannel) error
	close() error
}

// Extts is a PHC opened read-write with external timestamps enabled on some
// channels. Read (or Reader) drains their stamps; Close disables them and
// gives the pins back the functions they had.
type Extts struct {
	path    string
	domain  timebase.Domain
	dev     exttsIoctls
	caps    Caps
	enabled []ExttsChannel
	pins    []unix.PtpPinDesc // pins as they were before
	strict  bool
	masked  bool
	reader  *ExttsReader
}

// OpenExtts opens the PHC at path (/dev/ptpN) read-write (newer kernels
// refuse pin and extts requests on read-only files with EACCES), assigns the
// pins, enables the channels and returns the device ready to read. Nothing is
// changed on the device when a request is invalid for its capabilities; when
// the kernel refuses one, what was already done is undone.
func OpenExtts(path string, chans ...ExttsChannel) (*Extts, error) {
	f, index, err := openPHC(path, os.O_RDWR, "extts")
	if err != nil {
		return nil, err
	}
	x, err := newExtts(path, index, exttsFile{f}, int(f.Fd()), chans)
	if err != nil {
		f.Close()
		return nil, err
	}
	return x, nil
}

// newExtts sets up the channels through dev and reads events from fd.
func newExtts(path string, index int, dev exttsIoctls, fd int, chans []ExttsChannel) (*Extts, error) {
	caps, err := readCaps(path, dev)
	if err != nil {
		return nil, err
	}
	x := &Extts{path: path, domain: timebase.PHC(index), dev: dev, caps: caps, strict: true}
	if len(chans) == 0 {
		return nil, fmt.Errorf("phc %s: extts: no channel requested", path)
	}
	chans = append([]ExttsChannel(nil), chans...)
	if err := validateExtts(path, x.caps, chans); err != nil {
		return nil, err
	}
	for _, c := range chans {
		if err := x.enable(c); err != nil {
			return nil, errors.Join(err, x.undo())
		}
	}
	switch err := dev.mask(chans); {
	case err == nil:
		x.masked = true
	case errors.Is(err, unix.ENOTTY), errors.Is(err, unix.EINVAL):
		// Before 6.7 every open file shares one queue; OtherChannels counts
		// what other readers enabled.
	default:
		return nil, errors.Join(fmt.Errorf("phc %s: extts: PTP_MASK_EN_SINGLE: %w", path, err), x.undo())
	}
	x.reader = newExttsReader(path, x.domain, fd, x.caps.ExtTS, chans)
	return x, nil
}

// enable assigns c's pin and enables its channel.
func (x *Extts) enable(c ExttsChannel) error {
	bad := func(name, reason string, err error) error {
		return &ExttsError{Device: x.path, Channel: c.Channel, Pin: c.Pin, PinName: name, Reason: reason, Err: err}
	}
	var name string
	if c.Pin != NoPin {
		pd := unix.PtpPinDesc{Index: uint32(c.Pin)}
		if err := x.dev.pinGet(&pd); err != nil {
			return bad("", "PTP_PIN_GETFUNC", err)
		}
		name = cString(pd.Name[:])
		if pd.Func != unix.PTP_PF_EXTTS || pd.Chan != uint32(c.Channel) {
			set := unix.PtpPinDesc{Index: uint32(c.Pin), Func: unix.PTP_PF_EXTTS, Chan: uint32(c.Channel)}
			if err := x.dev.pinSet(&set); err != nil {
				switch {
				case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
					return bad(name, "the pin cannot timestamp external events on this channel (PTP_PIN_SETFUNC)", err)
				case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
					return bad(name, "not allowed to set the pin function (PTP_PIN_SETFUNC needs a read-write open)", err)
				}
				return bad(name, "PTP_PIN_SETFUNC", err)
			}
			x.pins = append(x.pins, pd)
		}
	}
	r := unix.PtpExttsRequest{Index: uint32(c.Channel), Flags: unix.PTP_ENABLE_FEATURE | uint32(c.Edges) | unix.PTP_STRICT_FLAGS}
	err := x.dev.extts(&r, true)
	if errors.Is(err, unix.ENOTTY) {
		// Before 5.8: no strict flag checks, and drivers may ignore the edges.
		r.Flags &= unix.PTP_EXTTS_V1_VALID_FLAGS
		x.strict = false
		err = x.dev.extts(&r, false)
	}
	switch {
	case err == nil:
		x.enabled = append(x.enabled, c)
		return nil
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ERANGE):
		return bad(name, "the driver cannot stamp "+c.Edges.String()+" edges", err)
	case errors.Is(err, unix.EINVAL):
		return bad(name, fmt.Sprintf("the driver refuses %s edges (flags %#x)", c.Edges, r.Flags), err)
	case errors.Is(err, unix.EBUSY):
		return bad(name, "channel busy (no pin assigned to it, or in use)", err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return bad(name, "not allowed to enable external timestamps (PTP_EXTTS_REQUEST2 needs a read-write open)", err)
	}
	return bad(name, "PTP_EXTTS_REQUEST2", err)
}

// undo disables the enabled channels and restores the pins, newest first.
func (x *Extts) undo() error {
	var errs []error
	for i := len(x.enabled) - 1; i >= 0; i-- {
		c := x.enabled[i]
		r := unix.PtpExttsRequest{Index: uint32(c.Channel)} // flags 0: disable
		err := x.dev.extts(&r, x.strict)
		if err != nil {
			errs = append(errs, &ExttsError{Device: x.path, Channel: c.Channel, Pin: c.Pin, Reason: "disable", Err: err})
		}
	}
	x.enabled = x.enabled[:0]
	for i := len(x.pins) - 1; i >= 0; i-- {
		pd := x.pins[i]
		set := unix.PtpPinDesc{Index: pd.Index, Func: pd.Func, Chan: pd.Chan}
		if err := x.dev.pinSet(&set); err != nil {
			errs = append(errs, fmt.Errorf("phc %s: extts: restore pin %d (%s) to %s channel %d: %w", x.path, pd.Index, cString(pd.Name[:]), PinFunc(pd.Func), pd.Chan, err))
		}
	}
	x.pins = x.pins[:0]
	return errors.Join(errs...)
}

// Path is the device node.
func (x *Extts) Path() string { return x.path }

// Domain is the clock domain of the stamps, timebase.PHC(index).
func (x *Extts) Domain() timebase.Domain { return x.domain }

// Caps are the clock's capabilities.
func (x *Extts) Caps() Caps { return x.caps }

// Channels are the enabled channels (edges defaulted).
func (x *Extts) Channels() []ExttsChannel { return append([]ExttsChannel(nil), x.enabled...) }

// Strict reports whether the kernel checked the edge flags (PTP_EXTTS_REQUEST2,
// Linux 5.8+); when false, a driver may have ignored the edges asked for.
func (x *Extts) Strict() bool { return x.strict }

// Masked reports whether this file's queue holds only its own channels (Linux
// 6.7+); when false, other readers of the PHC share the queue.
func (x *Extts) Masked() bool { return x.masked }

// Reader is the device's event reader.
func (x *Extts) Reader() *ExttsReader { return x.reader }

// Read is x.Reader().Read.
func (x *Extts) Read(ctx context.Context, dst []ExttsEvent) (int, error) {
	return x.reader.Read(ctx, dst)
}

// Stats are the reader's counters.
func (x *Extts) Stats() ExttsStats { return x.reader.Stats() }

// Close disables the channels (flags 0), restores the pins and closes the
// device. Call it after the reading goroutine has returned.
func (x *Extts) Close() error {
	err := x.undo()
	if cerr := x.dev.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("phc %s: close: %w", x.path, cerr))
	}
	return err
}

// ExttsReader reads struct ptp_extts_event records from a file descriptor (a
// PHC, or a pipe in tests) in batches: one poll with a bounded wait, one read of
// many events, decoded into the caller's buffer without allocating. One
// goroutine reads; Stats may be called from any.
type ExttsReader struct {
	path   string
	domain timebase.Domain
	fd     int
	pfd    [1]unix.PollFd
	buf    []byte
	loss   lossTracker
	c      exttsCounters
}

// newExttsReader reads fd, whose stamps are in domain d; nchan is the clock's
// channel count and chans the channels this reader enabled.
func newExttsReader(path string, d timebase.Domain, fd int, nchan int, chans []ExttsChannel) *ExttsReader {
	return &ExttsReader{
		path: path, domain: d, fd: fd,
		pfd:  [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}},
		buf:  make([]byte, exttsBufEvents*ExttsEventSize),
		loss: newLossTracker(nchan, chans),
	}
}

// Domain is the clock domain of the stamps.
func (r *ExttsReader) Domain() timebase.Domain { return r.domain }

// Stats are the reader's counters.
func (r *ExttsReader) Stats() ExttsStats { return r.c.stats() }

// Read waits until events are ready or ctx is done (noticed within 100 ms),
// then reads as many as fit dst (up to 64; the kernel returns at most 30) with
// one read and decodes them into dst, in the kernel's order. It returns
// ctx.Err() when ctx is done, io.EOF (wrapped, naming the device, as every
// other error) when the other end is gone, and an
// ErrPartialEvent (after the whole events before it) when a read ends inside
// an event: the stream is then out of step and the reader should be replaced.
// It does not allocate.
func (r *ExttsReader) Read(ctx context.Context, dst []ExttsEvent) (int, error) {
	if len(dst) == 0 {
		return 0, nil
	}
	want := min(len(dst), exttsBufEvents) * ExttsEventSize
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		r.pfd[0].Revents = 0
		n, err := unix.Poll(r.pfd[:], exttsPollMS)
		if err == unix.EINTR || n == 0 {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("phc %s: extts poll: %w", r.path, err)
		}
		ev := r.pfd[0].Revents
		switch {
		case ev&unix.POLLNVAL != 0:
			return 0, fmt.Errorf("phc %s: extts poll: %w", r.path, unix.EBADF)
		case ev&unix.POLLIN == 0 && ev&unix.POLLERR != 0:
			// ptp_poll reports POLLERR once the clock is unregistered.
			return 0, fmt.Errorf("phc %s: extts poll: device gone: %w", r.path, unix.ENODEV)
		case ev&unix.POLLIN == 0 && ev&unix.POLLHUP != 0:
			return 0, fmt.Errorf("phc %s: extts read: %w", r.path, io.EOF)
		case ev&unix.POLLIN == 0:
			continue
		}
		m, err := unix.Read(r.fd, r.buf[:want])
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("phc %s: extts read: %w", r.path, err)
		}
		if m == 0 {
			return 0, fmt.Errorf("phc %s: extts read: %w", r.path, io.EOF)
		}
		k, err := DecodeExttsEvents(dst, r.buf[:m], r.domain)
		r.c.reads.Add(1)
		r.c.events.Add(uint64(k))
		if k >= KernelExttsPerRead || k*ExttsEventSize == want {
			r.c.full.Add(1)
		}
		r.loss.observe(dst[:k], &r.c)
		if err != nil {
			return k, fmt.Errorf("phc %s: extts read of %d bytes: %w", r.path, m, err)
		}
		return k, nil
	}
}

// exttsFile issues the extts ioctls on the device; pin requests try the "2"
// number first (strict reserved fields, 5.8+) and fall back on ENOTTY.
type exttsFile struct{ f *os.File }

func (x exttsFile) ioctl(req uint, p unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, x.f.Fd(), uintptr(req), uintptr(p))
	if e != 0 {
		return e
	}
	return nil
}

func (x exttsFile) caps(c *unix.PtpClockCaps) error {
	return fileIoctls(x).caps(c)
}

func (x exttsFile) pinGet(p *unix.PtpPinDesc) error { return fileIoctls(x).pin(p) }

func (x exttsFile) pinSet(p *unix.PtpPinDesc) error {
	err := x.ioctl(unix.PTP_PIN_SETFUNC2, unsafe.Pointer(p))
	if err == unix.ENOTTY {
		err = x.ioctl(unix.PTP_PIN_SETFUNC, unsafe.Pointer(p))
	}
	return err
}

func (x exttsFile) extts(r *unix.PtpExttsRequest, v2 bool) error {
	if v2 {
		return x.ioctl(unix.PTP_EXTTS_REQUEST2, unsafe.Pointer(r))
	}
	return x.ioctl(unix.PTP_EXTTS_REQUEST, unsafe.Pointer(r))
}

func (x exttsFile) mask(chans []ExttsChannel) error {
	if err := x.ioctl(unix.PTP_MASK_CLEAR_ALL, nil); err != nil {
		return err
	}
	for _, c := range chans {
		ch := uint32(c.Channel)
		if err := x.ioctl(unix.PTP_MASK_EN_SINGLE, unsafe.Pointer(&ch)); err != nil {
			return err
		}
	}
	return nil
}

func (x exttsFile) close() error { return x.f.Close() }

// cString is a NUL-terminated name.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
