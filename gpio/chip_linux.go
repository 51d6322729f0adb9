package gpio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The ioctls, all from x/sys (the flags, which it lacks, are LineFlags).
const (
	ioctlChipInfo   = unix.GPIO_GET_CHIPINFO_IOCTL
	ioctlLineInfo   = unix.GPIO_V2_GET_LINEINFO_IOCTL
	ioctlGetLine    = unix.GPIO_V2_GET_LINE_IOCTL
	ioctlWatch      = unix.GPIO_V2_GET_LINEINFO_WATCH_IOCTL
	ioctlUnwatch    = unix.GPIO_GET_LINEINFO_UNWATCH_IOCTL
	defaultConsumer = "monagent"
)

// ioctler issues one ioctl on a chip descriptor; tests fake it.
type ioctler interface {
	ioctl(req uint, arg unsafe.Pointer) error
}

type fileIoctl struct{ fd uintptr }

func (f fileIoctl) ioctl(req uint, arg unsafe.Pointer) error {
	_, _, e := unix.Syscall(unix.SYS_IOCTL, f.fd, uintptr(req), uintptr(arg))
	if e != 0 {
		return e
	}
	return nil
}

// Chip is an open GPIO character device.
type Chip struct {
	path string
	f    *os.File
	dev  ioctler
	info ChipInfo
	// newFile wraps a request's descriptor (os.NewFile; tests replace it).
	newFile func(fd int, name string) *os.File
}

// Open opens a GPIO chip, "/dev/gpiochipN" or "gpiochipN", and reads its
// information.
func Open(path string) (*Chip, error) {
	path = DevicePath("/dev", path)
	f, err := os.OpenFile(path, os.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("gpio %s: no such chip: %w", path, err)
		}
		return nil, fmt.Errorf("gpio %s: %w", path, err)
	}
	c, err := newChip(path, fileIoctl{f.Fd()})
	if err != nil {
		f.Close()
		return nil, err
	}
	c.f = f
	return c, nil
}

func newChip(path string, dev ioctler) (*Chip, error) {
	var ci unix.GPIOChipInfo
	if err := dev.ioctl(ioctlChipInfo, unsafe.Pointer(&ci)); err != nil {
		if errors.Is(err, unix.ENOTTY) {
			return nil, fmt.Errorf("gpio %s: GPIO_GET_CHIPINFO_IOCTL: not a GPIO chip: %w", path, err)
		}
		if errors.Is(err, unix.ENOSYS) {
			// qemu-user answers ioctls it cannot translate with ENOSYS.
			return nil, fmt.Errorf("gpio %s: GPIO_GET_CHIPINFO_IOCTL: ioctl not implemented (an emulator without GPIO ioctls?): %w", path, err)
		}
		return nil, fmt.Errorf("gpio %s: GPIO_GET_CHIPINFO_IOCTL: %w", path, err)
	}
	return &Chip{
		path:    path,
		dev:     dev,
		info:    ChipInfo{Name: cString(ci.Name[:]), Label: cString(ci.Label[:]), Lines: int(ci.Lines)},
		newFile: func(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) },
	}, nil
}

// Path is the chip's device node.
func (c *Chip) Path() string { return c.path }

// Info is the chip's information, read at Open.
func (c *Chip) Info() ChipInfo { return c.info }

// Close closes the chip; requests made from it stay valid.
func (c *Chip) Close() error {
	if c.f == nil {
		return nil
	}
	return c.f.Close()
}

func (c *Chip) checkOffset(offset int) error {
	if offset < 0 || offset >= c.info.Lines {
		return fmt.Errorf("gpio %s line %d: offset beyond the chip's %d lines: %w",
			c.path, offset, c.info.Lines, unix.EINVAL)
	}
	return nil
}

// LineInfo reads one line's information (GPIO_V2_GET_LINEINFO_IOCTL).
func (c *Chip) LineInfo(offset int) (LineInfo, error) {
	return c.lineInfo(offset, ioctlLineInfo, "GPIO_V2_GET_LINEINFO_IOCTL")
}

func (c *Chip) lineInfo(offset int, req uint, name string) (LineInfo, error) {
	if err := c.checkOffset(offset); err != nil {
		return LineInfo{}, err
	}
	var li unix.GPIOV2LineInfo
	li.Offset = uint32(offset)
	if err := c.dev.ioctl(req, unsafe.Pointer(&li)); err != nil {
		if errors.Is(err, unix.ENOTTY) {
			return LineInfo{}, fmt.Errorf("gpio %s line %d: %s: %w: %w", c.path, offset, name, ErrNoUAPIv2, err)
		}
		return LineInfo{}, fmt.Errorf("gpio %s line %d: %s: %w", c.path, offset, name, err)
	}
	info, err := decodeLineInfo(unsafe.Slice((*byte)(unsafe.Pointer(&li)), unsafe.Sizeof(li)))
	if err != nil {
		return info, fmt.Errorf("gpio %s line %d: %s: %w", c.path, offset, name, err)
	}
	return info, nil
}

// WatchLineInfo asks the kernel to report changes of a line's information
// (GPIO_V2_GET_LINEINFO_WATCH_IOCTL: requested, released, reconfigured) and
// returns its current information. ReadInfoChange reads the reports.
func (c *Chip) WatchLineInfo(offset int) (LineInfo, error) {
	return c.lineInfo(offset, ioctlWatch, "GPIO_V2_GET_LINEINFO_WATCH_IOCTL")
}

// UnwatchLineInfo stops reporting changes of a line (GPIO_GET_LINEINFO_UNWATCH_IOCTL).
func (c *Chip) UnwatchLineInfo(offset int) error {
	if err := c.checkOffset(offset); err != nil {
		return err
	}
	o := uint32(offset)
	if err := c.dev.ioctl(ioctlUnwatch, unsafe.Pointer(&o)); err != nil {
		return fmt.Errorf("gpio %s line %d: GPIO_GET_LINEINFO_UNWATCH_IOCTL: %w", c.path, offset, err)
	}
	return nil
}

// ReadInfoChange waits (polling, so that ctx is seen within about 100 ms)
// for the next change of a watched line and returns it.
func (c *Chip) ReadInfoChange(ctx context.Context) (InfoChange, error) {
	if c.f == nil {
		return InfoChange{}, fmt.Errorf("gpio %s: read line info changes: chip not open", c.path)
	}
	return readInfoChange(ctx, newPollFD(c.f), c.path)
}

func readInfoChange(ctx context.Context, src eventFD, path string) (InfoChange, error) {
	var b [InfoChangedSize]byte
	for {
		if err := ctx.Err(); err != nil {
			return InfoChange{}, err
		}
		ready, err := src.wait(pollInterval)
		if err != nil {
			return InfoChange{}, fmt.Errorf("gpio %s: poll: %w", path, err)
		}
		if !ready {
			continue
		}
		n, err := src.read(b[:])
		if err == errAgain {
			continue
		}
		if err != nil {
			return InfoChange{}, fmt.Errorf("gpio %s: read line info changes: %w", path, err)
		}
		if n == 0 {
			return InfoChange{}, io.EOF
		}
		ch, err := DecodeInfoChanged(b[:n])
		if err != nil {
			return InfoChange{}, fmt.Errorf("gpio %s: %w", path, err)
		}
		return ch, nil
	}
}

// Request is a set of lines requested as inputs with edge detection; it owns
// the request's descriptor.
type Request struct {
	chip    string
	offsets []int
	cfg     LineConfig
	f       *os.File
}

// RequestLines requests lines of the chip as inputs (GPIO_V2_GET_LINE_IOCTL)
// with cfg. Errors name the chip, the lines and the reason: a line beyond the
// chip's lines, a line held by another consumer (wrapping ErrBusy, naming the
// consumer), permission denied (fs.ErrPermission), a kernel without uAPI v2
// (ErrNoUAPIv2), a debounce period or event clock the kernel refuses
// (ErrUnsupported).
func (c *Chip) RequestLines(offsets []int, cfg LineConfig) (*Request, error) {
	lines := linesName(offsets)
	req, err := buildRequest(offsets, cfg, c.info.Lines)
	if err != nil {
		return nil, fmt.Errorf("gpio %s %s: %w", c.path, lines, err)
	}
	if err := c.dev.ioctl(ioctlGetLine, unsafe.Pointer(&req)); err != nil {
		return nil, c.requestError(offsets, cfg, lines, err)
	}
	if cfg.Consumer == "" {
		cfg.Consumer = defaultConsumer
	}
	return &Request{
		chip:    c.path,
		offsets: append([]int(nil), offsets...),
		cfg:     cfg,
		f:       c.newFile(int(req.Fd), c.path+" "+lines),
	}, nil
}

func linesName(offsets []int) string {
	var b strings.Builder
	if len(offsets) == 1 {
		b.WriteString("line ")
	} else {
		b.WriteString("lines ")
	}
	for i, o := range offsets {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(o))
	}
	return b.String()
}

func (c *Chip) requestError(offsets []int, cfg LineConfig, lines string, err error) error {
	const op = "GPIO_V2_GET_LINE_IOCTL"
	switch {
	case errors.Is(err, unix.EBUSY):
		for _, o := range offsets {
			li, ierr := c.LineInfo(o)
			if ierr == nil && li.Used() {
				consumer := li.Consumer
				if consumer == "" {
					consumer = "an unnamed consumer"
				}
				return fmt.Errorf("gpio %s line %d: %s: held by %q: %w: %w", c.path, o, op, consumer, ErrBusy, err)
			}
		}
		return fmt.Errorf("gpio %s %s: %s: %w: %w", c.path, lines, op, ErrBusy, err)
	case errors.Is(err, unix.ENOTTY):
		return fmt.Errorf("gpio %s %s: %s: %w: %w", c.path, lines, op, ErrNoUAPIv2, err)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return fmt.Errorf("gpio %s %s: %s: permission denied: %w", c.path, lines, op, err)
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL) && (cfg.Debounce != 0 || cfg.Clock != ClockMonotonic):
		return fmt.Errorf("gpio %s %s: %s: unsupported configuration (debounce %v, event clock %v): %w: %w",
			c.path, lines, op, cfg.Debounce, cfg.Clock, ErrUnsupported, err)
	}
	return fmt.Errorf("gpio %s %s: %s: %w", c.path, lines, op, err)
}

// The line flags of each edge detection, bias and event clock (the zero
// value of each asks for the kernel's default: no flag).
var (
	edgeFlags = [...]LineFlags{DetectNone: 0, DetectRising: FlagEdgeRising,
		DetectFalling: FlagEdgeFalling, DetectBoth: FlagEdgeRising | FlagEdgeFalling}
	biasFlags = [...]LineFlags{BiasAsIs: 0, BiasPullUp: FlagBiasPullUp,
		BiasPullDown: FlagBiasPullDown, BiasDisabled: FlagBiasDisabled}
	clockFlags = [...]LineFlags{ClockMonotonic: 0, ClockRealtime: FlagEventClockRealtime,
		ClockHTE: FlagEventClockHTE}
)

// buildRequest validates a request and fills the kernel's struct.
func buildRequest(offsets []int, cfg LineConfig, chipLines int) (unix.GPIOV2LineRequest, error) {
	var req unix.GPIOV2LineRequest
	if len(offsets) == 0 || len(offsets) > MaxLines {
		return req, fmt.Errorf("%d lines, want 1 to %d: %w", len(offsets), MaxLines, unix.EINVAL)
	}
	for i, o := range offsets {
		if o < 0 || o >= chipLines {
			return req, fmt.Errorf("line %d: offset beyond the chip's %d lines: %w", o, chipLines, unix.EINVAL)
		}
		for _, p := range offsets[:i] {
			if p == o {
				return req, fmt.Errorf("line %d: requested twice: %w", o, unix.EINVAL)
			}
		}
		req.Offsets[i] = uint32(o)
	}
	req.Num_lines = uint32(len(offsets))
	consumer := cfg.Consumer
	if consumer == "" {
		consumer = defaultConsumer
	}
	if len(consumer) >= maxNameSize {
		return req, fmt.Errorf("consumer %q: longer than %d bytes: %w", consumer, maxNameSize-1, unix.EINVAL)
	}
	copy(req.Consumer[:], consumer)
	if cfg.EventBufferSize < 0 || cfg.EventBufferSize > MaxEventBufferSize {
		return req, fmt.Errorf("event buffer size %d: want 0 to %d: %w", cfg.EventBufferSize, MaxEventBufferSize, unix.EINVAL)
	}
	req.Event_buffer_size = uint32(cfg.EventBufferSize)

	flags := FlagInput
	if int(cfg.Edge) >= len(edgeFlags) {
		return req, fmt.Errorf("edge detection %d: unknown: %w", cfg.Edge, unix.EINVAL)
	}
	flags |= edgeFlags[cfg.Edge]
	if int(cfg.Bias) >= len(biasFlags) {
		return req, fmt.Errorf("bias %d: unknown: %w", cfg.Bias, unix.EINVAL)
	}
	flags |= biasFlags[cfg.Bias]
	if cfg.ActiveLow {
		flags |= FlagActiveLow
	}
	if int(cfg.Clock) >= len(clockFlags) {
		return req, fmt.Errorf("event clock %d: unknown: %w", cfg.Clock, unix.EINVAL)
	}
	flags |= clockFlags[cfg.Clock]
	if cfg.Clock != ClockMonotonic && cfg.Edge == DetectNone {
		return req, fmt.Errorf("event clock %v without edge detection: %w", cfg.Clock, unix.EINVAL)
	}
	req.Config.Flags = uint64(flags)
	if cfg.Debounce != 0 {
		us := cfg.Debounce / time.Microsecond
		if cfg.Debounce < 0 || cfg.Debounce%time.Microsecond != 0 || us > 1<<32-1 {
			return req, fmt.Errorf("debounce %v: want whole microseconds up to %v: %w",
				cfg.Debounce, time.Duration(1<<32-1)*time.Microsecond, unix.EINVAL)
		}
		a := &req.Config.Attrs[0]
		a.Attr.Id = attrDebounce
		// __u32 debounce_period_us is the union's first four bytes.
		*(*uint32)(unsafe.Pointer(&a.Attr.Flags)) = uint32(us)
		a.Mask = 1<<len(offsets) - 1
		if len(offsets) == MaxLines {
			a.Mask = ^uint64(0)
		}
		req.Config.Num_attrs = 1
	}
	return req, nil
}

// Offsets are the requested lines.
func (r *Request) Offsets() []int { return append([]int(nil), r.offsets...) }

// Config is the configuration the lines were requested with.
func (r *Request) Config() LineConfig { return r.cfg }

// Fd is the request's descriptor (valid until Close).
func (r *Request) Fd() uintptr { return r.f.Fd() }

// Reader returns a batch reader of the request's events that reads at most
// maxEvents per read(2) (at most MaxEventBufferSize). Close the request only
// after the reader's last Read returned.
func (r *Request) Reader(maxEvents int) *Reader {
	return newReader(newPollFD(r.f), r.chip+" "+linesName(r.offsets), r.cfg.Clock, maxEvents)
}

// Close releases the lines.
func (r *Request) Close() error {
	if err := r.f.Close(); err != nil {
		return fmt.Errorf("gpio %s: close request: %w", r.chip, err)
	}
	return nil
}
