package gpio

import (
	"context"
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fakeChip answers the chip ioctls like gpiolib-cdev: an 8-line chip whose
// line 3 is held by gpiomon (goldenRequested's line info).
type fakeChip struct {
	t       *testing.T
	getLine error // GPIO_V2_GET_LINE_IOCTL's error
	reqFd   int   // the descriptor a successful request returns
	req     unix.GPIOV2LineRequest
	calls   []uint
}

func (f *fakeChip) ioctl(req uint, arg unsafe.Pointer) error {
	f.calls = append(f.calls, req)
	switch req {
	case ioctlChipInfo:
		ci := (*unix.GPIOChipInfo)(arg)
		copy(ci.Name[:], "gpiochip7")
		copy(ci.Label[:], "gpio-sim.0-node0")
		ci.Lines = 8
	case ioctlLineInfo, ioctlWatch:
		li := (*unix.GPIOV2LineInfo)(arg)
		off := li.Offset
		*li = unix.GPIOV2LineInfo{Offset: off}
		if off == 3 {
			copy(unsafe.Slice((*byte)(arg), LineInfoSize), goldenRequested[:LineInfoSize])
		}
	case ioctlGetLine:
		r := (*unix.GPIOV2LineRequest)(arg)
		f.req = *r
		if f.getLine != nil {
			return f.getLine
		}
		r.Fd = int32(f.reqFd)
	case ioctlUnwatch:
	default:
		f.t.Fatalf("unexpected ioctl %#x", req)
	}
	return nil
}

func fakeChipOpen(t *testing.T) (*Chip, *fakeChip) {
	t.Helper()
	littleEndian(t)
	f := &fakeChip{t: t}
	c, err := newChip("/dev/gpiochip7", f)
	if err != nil {
		t.Fatal(err)
	}
	return c, f
}

func TestChipInfo(t *testing.T) {
	c, _ := fakeChipOpen(t)
	if got := c.Info(); got != (ChipInfo{Name: "gpiochip7", Label: "gpio-sim.0-node0", Lines: 8}) {
		t.Errorf("Info = %+v", got)
	}
	li, err := c.LineInfo(3)
	if err != nil {
		t.Fatal(err)
	}
	if li.Consumer != "gpiomon" || li.Name != "DATA_READY" || li.Debounce != 500*time.Microsecond || !li.Used() {
		t.Errorf("LineInfo(3) = %+v", li)
	}
	if li, err := c.WatchLineInfo(0); err != nil || li.Used() || li.Offset != 0 {
		t.Errorf("WatchLineInfo(0) = %+v, %v", li, err)
	}
	if err := c.UnwatchLineInfo(0); err != nil {
		t.Error(err)
	}
	if _, err := c.LineInfo(8); err == nil || !strings.Contains(err.Error(), "line 8: offset beyond the chip's 8 lines") {
		t.Errorf("LineInfo(8): %v", err)
	}
}

// TestRequestEncoding checks the bytes the kernel receives, at the offsets
// of include/uapi/linux/gpio.h.
func TestRequestEncoding(t *testing.T) {
	littleEndian(t)
	req, err := buildRequest([]int{2, 5}, LineConfig{Consumer: "probe", Edge: DetectBoth, Bias: BiasPullDown,
		ActiveLow: true, Debounce: 500 * time.Microsecond, Clock: ClockRealtime, EventBufferSize: 1024}, 8)
	if err != nil {
		t.Fatal(err)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&req)), unsafe.Sizeof(req))
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	for _, c := range []struct {
		field     string
		got, want uint64
	}{
		{"offsets[0]", uint64(u32(0)), 2},
		{"offsets[1]", uint64(u32(4)), 5},
		{"config.flags: active_low|input|edge_rising|edge_falling|pull_down|clock_realtime", u64(288), 0x2 | 0x4 | 0x10 | 0x20 | 0x200 | 0x800},
		{"config.num_attrs", uint64(u32(296)), 1},
		{"config.attrs[0].attr.id (DEBOUNCE)", uint64(u32(320)), 3},
		{"config.attrs[0].attr.debounce_period_us", uint64(u32(328)), 500},
		{"config.attrs[0].mask (both lines)", u64(336), 3},
		{"num_lines", uint64(u32(560)), 2},
		{"event_buffer_size", uint64(u32(564)), 1024},
	} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.field, c.got, c.want)
		}
	}
	if got := cString(b[256:288]); got != "probe" {
		t.Errorf("consumer %q", got)
	}
	// Defaults: input only, MONOTONIC, no attributes, consumer monagent.
	req, err = buildRequest([]int{0}, LineConfig{}, 8)
	if err != nil || req.Config.Flags != uint64(FlagInput) || req.Config.Num_attrs != 0 || cString(req.Consumer[:]) != "monagent" {
		t.Errorf("default request %+v, %v", req.Config, err)
	}
}

func TestRequestValidation(t *testing.T) {
	many := make([]int, MaxLines+1)
	for i := range many {
		many[i] = i
	}
	for _, c := range []struct {
		name    string
		offsets []int
		cfg     LineConfig
		errHas  string
	}{
		{"no lines", nil, LineConfig{}, "0 lines"},
		{"too many lines", many, LineConfig{}, "65 lines"},
		{"offset beyond", []int{1, 8}, LineConfig{}, "line 8: offset beyond the chip's 8 lines"},
		{"negative offset", []int{-1}, LineConfig{}, "line -1: offset beyond"},
		{"twice", []int{4, 4}, LineConfig{}, "line 4: requested twice"},
		{"long consumer", []int{0}, LineConfig{Consumer: strings.Repeat("c", 32)}, "longer than 31 bytes"},
		{"event buffer", []int{0}, LineConfig{EventBufferSize: 1025}, "event buffer size 1025"},
		{"sub-microsecond debounce", []int{0}, LineConfig{Edge: DetectBoth, Debounce: 1500 * time.Nanosecond}, "debounce 1.5µs"},
		{"negative debounce", []int{0}, LineConfig{Debounce: -time.Microsecond}, "debounce -1µs"},
		{"clock without edges", []int{0}, LineConfig{Clock: ClockRealtime}, "event clock realtime without edge detection"},
		{"unknown clock", []int{0}, LineConfig{Edge: DetectRising, Clock: 9}, "event clock 9"},
		{"unknown edge", []int{0}, LineConfig{Edge: 9}, "edge detection 9"},
		{"unknown bias", []int{0}, LineConfig{Bias: 9}, "bias 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chip, f := fakeChipOpen(t)
			_, err := chip.RequestLines(c.offsets, c.cfg)
			if err == nil || !errors.Is(err, unix.EINVAL) || !strings.Contains(err.Error(), c.errHas) ||
				!strings.HasPrefix(err.Error(), "gpio /dev/gpiochip7 line") {
				t.Fatalf("RequestLines: %v; want EINVAL naming the chip and %q", err, c.errHas)
			}
			if len(f.calls) != 1 { // chip info only: nothing reached the kernel
				t.Errorf("ioctls %#x", f.calls)
			}
		})
	}
}

func TestRequestErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		offsets []int
		cfg     LineConfig
		errno   error
		is      []error
		errHas  string
	}{
		{"busy names the consumer", []int{1, 3}, LineConfig{Edge: DetectBoth}, unix.EBUSY,
			[]error{ErrBusy, unix.EBUSY}, `gpio /dev/gpiochip7 line 3: GPIO_V2_GET_LINE_IOCTL: held by "gpiomon"`},
		{"busy, holder unknown", []int{1}, LineConfig{}, unix.EBUSY,
			[]error{ErrBusy}, "gpio /dev/gpiochip7 line 1: GPIO_V2_GET_LINE_IOCTL: line busy"},
		{"permission", []int{1}, LineConfig{}, unix.EACCES,
			[]error{fs.ErrPermission}, "line 1: GPIO_V2_GET_LINE_IOCTL: permission denied"},
		{"no uAPI v2", []int{1}, LineConfig{}, unix.ENOTTY,
			[]error{ErrNoUAPIv2, unix.ENOTTY}, "line 1: GPIO_V2_GET_LINE_IOCTL: kernel without GPIO uAPI v2"},
		{"debounce refused", []int{1, 2}, LineConfig{Edge: DetectRising, Debounce: 10 * time.Microsecond}, unix.EINVAL,
			[]error{ErrUnsupported, errors.ErrUnsupported, unix.EINVAL}, "lines 1,2: GPIO_V2_GET_LINE_IOCTL: unsupported configuration (debounce 10µs, event clock monotonic)"},
		{"HTE without CONFIG_HTE", []int{1}, LineConfig{Edge: DetectRising, Clock: ClockHTE}, unix.EOPNOTSUPP,
			[]error{ErrUnsupported}, "event clock hte"},
		{"plain EINVAL", []int{1}, LineConfig{Edge: DetectRising}, unix.EINVAL,
			[]error{unix.EINVAL}, "line 1: GPIO_V2_GET_LINE_IOCTL: invalid argument"},
	} {
		t.Run(c.name, func(t *testing.T) {
			chip, f := fakeChipOpen(t)
			f.getLine = c.errno
			_, err := chip.RequestLines(c.offsets, c.cfg)
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Fatalf("RequestLines: %v; want it to say %q", err, c.errHas)
			}
			for _, is := range c.is {
				if !errors.Is(err, is) {
					t.Errorf("%v is not %v", err, is)
				}
			}
			if c.errno != unix.EINVAL && errors.Is(err, ErrUnsupported) != errors.Is(c.is[0], ErrUnsupported) {
				t.Errorf("%v: ErrUnsupported mismatch", err)
			}
		})
	}
}

// TestRequestReader: a request's descriptor (here a pipe) read through the
// request's own Reader, stamped with its event clock.
func TestRequestReader(t *testing.T) {
	chip, f := fakeChipOpen(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fd, err := unix.Dup(int(r.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	f.reqFd = fd
	req, err := chip.RequestLines([]int{6}, LineConfig{Edge: DetectBoth, Clock: ClockRealtime})
	if err != nil {
		t.Fatal(err)
	}
	defer req.Close()
	if got := req.Offsets(); len(got) != 1 || got[0] != 6 || req.Config().Consumer != "monagent" || int(req.Fd()) != fd {
		t.Errorf("request %v %+v fd %d", got, req.Config(), req.Fd())
	}
	write(t, w, edge(10, 6, 1, 1, EdgeRising), edge(20, 6, 2, 2, EdgeFalling))
	evs := make([]Event, 8)
	n, lost, err := req.Reader(16).Read(context.Background(), evs)
	if n != 2 || lost != 0 || err != nil || evs[1] != (Event{TimestampNS: 20, Offset: 6, Seqno: 2, LineSeqno: 2, Edge: EdgeFalling, Clock: ClockRealtime}) {
		t.Fatalf("Read = %d, %d, %v, %+v", n, lost, err, evs[:n])
	}
	if err := req.Close(); err != nil {
		t.Error(err)
	}
}

func TestReadInfoChange(t *testing.T) {
	littleEndian(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	w.Write(goldenRequested)
	w.Write(goldenRequested[:100])
	c, err := readInfoChange(context.Background(), newPollFD(r), "/dev/gpiochip7")
	if err != nil || c.Kind != ChangeRequested || c.Info.Consumer != "gpiomon" {
		t.Fatalf("readInfoChange = %+v, %v", c, err)
	}
	_, err = readInfoChange(context.Background(), newPollFD(r), "/dev/gpiochip7")
	if !errors.Is(err, ErrPartialEvent) || !strings.Contains(err.Error(), "gpio /dev/gpiochip7") {
		t.Fatalf("short change: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("gpiochip-monagent-absent")
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "gpio /dev/gpiochip-monagent-absent: no such chip") {
		t.Errorf("Open of a missing chip: %v", err)
	}
	// A character device that is no GPIO chip answers ENOTTY.
	if _, err := os.Stat("/dev/null"); err != nil {
		t.Skip("no /dev/null:", err)
	}
	_, err = Open("/dev/null")
	if errors.Is(err, unix.ENOSYS) {
		t.Skipf("ioctls are not passed to the kernel here (qemu-user): %v", err)
	}
	if !errors.Is(err, unix.ENOTTY) || !strings.Contains(err.Error(), "gpio /dev/null: GPIO_GET_CHIPINFO_IOCTL: not a GPIO chip") {
		t.Errorf("Open(/dev/null): %v", err)
	}
}
