//go:build linux

package phc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// TestExttsStructLayouts checks the extts structs against
// include/uapi/linux/ptp_clock.h on every GOARCH the tests run on (CI runs
// them again as GOARCH=arm under qemu-arm-static).
func TestExttsStructLayouts(t *testing.T) {
	var req unix.PtpExttsRequest
	var pin unix.PtpPinDesc
	var ev unix.PtpExttsEvent
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof ptp_extts_request (PTP_EXTTS_REQUEST2)", unsafe.Sizeof(req), ioctlSize(unix.PTP_EXTTS_REQUEST2)},
		{"sizeof ptp_extts_request (PTP_EXTTS_REQUEST)", unsafe.Sizeof(req), ioctlSize(unix.PTP_EXTTS_REQUEST)},
		{"sizeof ptp_extts_request", unsafe.Sizeof(req), 16},
		{"ptp_extts_request.index", unsafe.Offsetof(req.Index), 0},
		{"ptp_extts_request.flags", unsafe.Offsetof(req.Flags), 4},
		{"ptp_extts_request.rsv", unsafe.Offsetof(req.Rsv), 8},
		{"sizeof ptp_pin_desc (PTP_PIN_SETFUNC2)", unsafe.Sizeof(pin), ioctlSize(unix.PTP_PIN_SETFUNC2)},
		{"sizeof ptp_pin_desc (PTP_PIN_SETFUNC)", unsafe.Sizeof(pin), ioctlSize(unix.PTP_PIN_SETFUNC)},
		{"sizeof ptp_pin_desc", unsafe.Sizeof(pin), 96},
		{"ptp_pin_desc.index", unsafe.Offsetof(pin.Index), 64},
		{"ptp_pin_desc.func", unsafe.Offsetof(pin.Func), 68},
		{"ptp_pin_desc.chan", unsafe.Offsetof(pin.Chan), 72},
		{"ptp_pin_desc.rsv", unsafe.Offsetof(pin.Rsv), 76},
		{"sizeof ptp_extts_event", unsafe.Sizeof(ev), ExttsEventSize},
		{"ptp_extts_event.t.sec", unsafe.Offsetof(ev.T) + unsafe.Offsetof(ev.T.Sec), 0},
		{"ptp_extts_event.t.nsec", unsafe.Offsetof(ev.T) + unsafe.Offsetof(ev.T.Nsec), 8},
		{"ptp_extts_event.index", unsafe.Offsetof(ev.Index), 16},
		{"ptp_extts_event.flags", unsafe.Offsetof(ev.Flags), 20},
		{"ptp_extts_event.rsv", unsafe.Offsetof(ev.Rsv), 24},
		{"PTP_MASK_EN_SINGLE argument", ioctlSize(unix.PTP_MASK_EN_SINGLE), 4},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.name, c.got, c.want)
		}
	}
	if unix.PTP_EXTTS_VALID_FLAGS&^0x1f != 0 || unix.PTP_RISING_EDGE != uint32(EdgeRising) || unix.PTP_FALLING_EDGE != uint32(EdgeFalling) {
		t.Error("edge flags differ from the uapi's")
	}
}

// TestDecoderMatchesKernelStruct reads the golden records through x/sys's
// struct and compares them with the decoder's offsets.
func TestDecoderMatchesKernelStruct(t *testing.T) {
	g := goldenExtts(t)
	dst := make([]ExttsEvent, 3)
	if _, err := DecodeExttsEvents(dst, g, 0); err != nil {
		t.Fatal(err)
	}
	for i := range dst {
		k := (*unix.PtpExttsEvent)(unsafe.Pointer(&g[i*ExttsEventSize]))
		if clockTimeNS(k.T) != dst[i].PHCNS || k.Index != dst[i].Channel || k.Flags != dst[i].Flags {
			t.Errorf("event %d: kernel struct %+v, decoded %+v", i, *k, dst[i])
		}
	}
}

// fakeExtts is a PHC with programmable pins that logs every setting ioctl.
type fakeExtts struct {
	capsv  unix.PtpClockCaps
	pins   []unix.PtpPinDesc
	noExt  map[int]bool // pins that cannot do EXTTS
	refuse map[string]error
	log    []string
}

func newFakeExtts(nExt, nPins int) *fakeExtts {
	f := &fakeExtts{capsv: unix.PtpClockCaps{N_ext_ts: int32(nExt), N_pins: int32(nPins)}, noExt: map[int]bool{}, refuse: map[string]error{}}
	for i := 0; i < nPins; i++ {
		p := unix.PtpPinDesc{Index: uint32(i)}
		copy(p.Name[:], fmt.Sprintf("SDP%d", i))
		f.pins = append(f.pins, p)
	}
	return f
}

func (f *fakeExtts) caps(c *unix.PtpClockCaps) error { *c = f.capsv; return nil }
func (f *fakeExtts) pinGet(p *unix.PtpPinDesc) error {
	if int(p.Index) >= len(f.pins) {
		return unix.EINVAL
	}
	*p = f.pins[p.Index]
	return nil
}
func (f *fakeExtts) pinSet(p *unix.PtpPinDesc) error {
	f.log = append(f.log, fmt.Sprintf("setfunc pin %d %s chan %d", p.Index, PinFunc(p.Func), p.Chan))
	if err := f.refuse["setfunc"]; err != nil {
		return err
	}
	if p.Func == unix.PTP_PF_EXTTS && f.noExt[int(p.Index)] {
		return unix.EOPNOTSUPP
	}
	f.pins[p.Index].Func, f.pins[p.Index].Chan = p.Func, p.Chan
	return nil
}
func (f *fakeExtts) extts(r *unix.PtpExttsRequest, v2 bool) error {
	v := "request"
	if v2 {
		v = "request2"
	}
	f.log = append(f.log, fmt.Sprintf("%s %d flags %#x", v, r.Index, r.Flags))
	if err := f.refuse[v]; err != nil && r.Flags != 0 {
		return err
	}
	if err := f.refuse[fmt.Sprintf("%s %d", v, r.Index)]; err != nil && r.Flags != 0 {
		return err
	}
	return nil
}
func (f *fakeExtts) mask(chans []ExttsChannel) error {
	f.log = append(f.log, fmt.Sprintf("mask %d channels", len(chans)))
	return f.refuse["mask"]
}
func (f *fakeExtts) close() error { f.log = append(f.log, "close"); return nil }

func sameLog(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ioctls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestExttsEnablesAndCloseDisables(t *testing.T) {
	f := newFakeExtts(2, 3)
	x, err := newExtts("/dev/ptp1", 1, f, -1, []ExttsChannel{{Channel: 0, Pin: 2, Edges: EdgeBoth}, {Channel: 1, Pin: NoPin}})
	if err != nil {
		t.Fatal(err)
	}
	if !x.Strict() || !x.Masked() || x.Domain() != timebase.PHC(1) || x.Channels()[1].Edges != EdgeRising {
		t.Fatalf("strict %v masked %v domain %v channels %+v", x.Strict(), x.Masked(), x.Domain(), x.Channels())
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	sameLog(t, f.log,
		"setfunc pin 2 extts chan 0",
		"request2 0 flags 0xf", // ENABLE | RISING | FALLING | STRICT
		"request2 1 flags 0xb", // ENABLE | RISING | STRICT
		"mask 2 channels",
		"request2 1 flags 0x0",
		"request2 0 flags 0x0",
		"setfunc pin 2 none chan 0",
		"close")
}

func TestExttsPinAlreadyAssignedIsLeftAlone(t *testing.T) {
	f := newFakeExtts(1, 1)
	f.pins[0].Func = unix.PTP_PF_EXTTS
	x, err := newExtts("/dev/ptp0", 0, f, -1, []ExttsChannel{{Channel: 0, Pin: 0}})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	sameLog(t, f.log, "request2 0 flags 0xb", "mask 1 channels", "request2 0 flags 0x0", "close")
}

func TestExttsOldKernels(t *testing.T) {
	f := newFakeExtts(1, 0)
	f.refuse["request2"] = unix.ENOTTY
	f.refuse["mask"] = unix.ENOTTY
	x, err := newExtts("/dev/ptp0", 0, f, -1, []ExttsChannel{{Channel: 0, Pin: NoPin, Edges: EdgeFalling}})
	if err != nil {
		t.Fatal(err)
	}
	if x.Strict() || x.Masked() {
		t.Fatalf("strict %v masked %v on a pre-5.8 kernel", x.Strict(), x.Masked())
	}
	x.Close()
	sameLog(t, f.log, "request2 0 flags 0xd", "request 0 flags 0x5", "mask 1 channels", "request 0 flags 0x0", "close")
}

func TestExttsRefusals(t *testing.T) {
	two := []ExttsChannel{{Channel: 0, Pin: 0}, {Channel: 1, Pin: 1, Edges: EdgeBoth}}
	for _, c := range []struct {
		name  string
		setup func(f *fakeExtts)
		chans []ExttsChannel
		is    error
		msg   string
		log   []string
	}{
		{"no extts channels", func(f *fakeExtts) { f.capsv.N_ext_ts = 0 }, two, errors.ErrUnsupported,
			"phc /dev/ptp1 extts channel 0 pin 0: the clock has no external timestamp channels (n_ext_ts 0): unsupported operation", nil},
		{"pin out of range", func(f *fakeExtts) { f.capsv.N_pins = 1 }, two, ErrOutOfRange,
			"phc /dev/ptp1 extts channel 1 pin 1: pin out of range: the clock has 1 (0..0): out of range", nil},
		{"pin that cannot do extts", func(f *fakeExtts) { f.noExt[1] = true }, two, unix.EOPNOTSUPP,
			"phc /dev/ptp1 extts channel 1 pin 1 (SDP1): the pin cannot timestamp external events on this channel (PTP_PIN_SETFUNC): operation not supported",
			[]string{"setfunc pin 0 extts chan 0", "request2 0 flags 0xb", "setfunc pin 1 extts chan 1", "request2 0 flags 0x0", "setfunc pin 0 none chan 0"}},
		{"edges the driver cannot stamp", func(f *fakeExtts) { f.refuse["request2 1"] = unix.EOPNOTSUPP }, two, errors.ErrUnsupported,
			"phc /dev/ptp1 extts channel 1 pin 1 (SDP1): the driver cannot stamp both edges: operation not supported",
			[]string{"setfunc pin 0 extts chan 0", "request2 0 flags 0xb", "setfunc pin 1 extts chan 1", "request2 1 flags 0xf",
				"request2 0 flags 0x0", "setfunc pin 1 none chan 0", "setfunc pin 0 none chan 0"}},
		{"read-only open", func(f *fakeExtts) { f.refuse["setfunc"] = unix.EACCES }, two[:1], unix.EACCES,
			"phc /dev/ptp1 extts channel 0 pin 0 (SDP0): not allowed to set the pin function (PTP_PIN_SETFUNC needs a read-write open): permission denied",
			[]string{"setfunc pin 0 extts chan 0"}},
		{"busy channel", func(f *fakeExtts) { f.refuse["request2"] = unix.EBUSY }, []ExttsChannel{{Channel: 1, Pin: NoPin}}, unix.EBUSY,
			"phc /dev/ptp1 extts channel 1: channel busy", []string{"request2 1 flags 0xb"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeExtts(2, 2)
			c.setup(f)
			_, err := newExtts("/dev/ptp1", 1, f, -1, c.chans)
			var xe *ExttsError
			if err == nil || !strings.HasPrefix(err.Error(), c.msg) || !errors.Is(err, c.is) || !errors.As(err, &xe) {
				t.Fatalf("got %v\nwant %q (is %v)", err, c.msg, c.is)
			}
			sameLog(t, f.log, c.log...)
		})
	}
}

// pipeReader is an extts reader over a pipe, and the pipe's write end.
func pipeReader(t *testing.T, chans ...ExttsChannel) (*ExttsReader, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return newExttsReader("/dev/ptp1", timebase.PHC(1), int(r.Fd()), 2, chans), w
}

func TestExttsReaderBatchesInOrder(t *testing.T) {
	rd, w := pipeReader(t, ExttsChannel{Channel: 0, PeriodNS: 500_000_000}, ExttsChannel{Channel: 1})
	var b []byte
	for i := 0; i < 64; i++ {
		b = AppendExttsEvent(b, uint32(i%2), 1_700_000_000_000_000_000+int64(i)*250_000_000, 0)
	}
	if _, err := w.Write(b); err != nil { // 2 KiB: one atomic pipe write
		t.Fatal(err)
	}
	ctx := context.Background()
	dst := make([]ExttsEvent, 64)
	n, err := rd.Read(ctx, dst)
	if err != nil || n != 64 {
		t.Fatalf("one read gave %d events, %v", n, err)
	}
	for i, e := range dst {
		if e.Channel != uint32(i%2) || e.PHCNS != 1_700_000_000_000_000_000+int64(i)*250_000_000 || e.Domain != timebase.PHC(1) {
			t.Fatalf("event %d: %+v", i, e)
		}
	}
	// A smaller caller buffer: several reads, order kept across them.
	w.Write(goldenExtts(t))
	w.Write(goldenExtts(t)[:2*ExttsEventSize])
	var got []ExttsEvent
	for len(got) < 5 {
		n, err := rd.Read(ctx, dst[:2])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, dst[:n]...)
	}
	want := append(goldenExttsEvents(timebase.PHC(1)), goldenExttsEvents(timebase.PHC(1))[:2]...)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("event %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	s := rd.Stats()
	// 64 + 5 events in 1 + 3 reads; the first returned more than the kernel's
	// maximum, the next two filled the caller's buffer of 2. The golden events go
	// back 15 s on channel 0 (at x.123) and channel 1 (at x.999); channel 0
	// then moves 0.877 s on (1.75 of its 500 ms periods: one edge missed), and
	// the second copy goes back again on channel 0.
	if s.Events != 69 || s.Reads != 4 || s.FullReads != 3 || s.Backwards != 3 || s.MissedEdges != 1 || s.OtherChannels != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestExttsReaderShortReadAndEOF(t *testing.T) {
	rd, w := pipeReader(t, ExttsChannel{Channel: 0})
	w.Write(goldenExtts(t)[:40])
	dst := make([]ExttsEvent, 4)
	n, err := rd.Read(context.Background(), dst)
	if n != 1 || !errors.Is(err, ErrPartialEvent) || err.Error() != "phc /dev/ptp1: extts read of 40 bytes: partial extts event: 8 trailing bytes of 32" {
		t.Fatalf("short read: %d, %v", n, err)
	}
	w.Close()
	if n, err := rd.Read(context.Background(), dst); n != 0 || !errors.Is(err, io.EOF) {
		t.Fatalf("after close: %d, %v", n, err)
	}
}

func TestExttsReaderSeesCancel(t *testing.T) {
	rd, _ := pipeReader(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := rd.Read(ctx, make([]ExttsEvent, 4))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Read did not return after cancel")
	}
}

func TestExttsReadDoesNotAllocate(t *testing.T) {
	rd, w := pipeReader(t, ExttsChannel{Channel: 0}, ExttsChannel{Channel: 1})
	g := goldenExtts(t)
	wfd := int(w.Fd())
	dst := make([]ExttsEvent, 8)
	ctx := context.Background()
	if a := testing.AllocsPerRun(100, func() {
		unix.Write(wfd, g)
		if n, err := rd.Read(ctx, dst); n != 3 || err != nil {
			t.Fatal(n, err)
		}
	}); a != 0 {
		t.Fatalf("Read allocates %v times", a)
	}
}

func TestExttsReadsThroughTheDevice(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f := newFakeExtts(2, 0)
	x, err := newExtts("/dev/ptp4", 4, f, int(r.Fd()), []ExttsChannel{{Channel: 1, Pin: NoPin}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer x.Close()
	w.Write(goldenExtts(t))
	dst := make([]ExttsEvent, 8)
	n, err := x.Read(context.Background(), dst)
	if n != 3 || err != nil || dst[1].Domain != timebase.PHC(4) || dst[1].Channel != 1 {
		t.Fatalf("%d, %v, %+v", n, err, dst[:n])
	}
	if s := x.Stats(); s.Events != 3 || s.OtherChannels != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRealExtts enables and disables every extts channel of every PHC this
// machine has (the e1000e PHC of the QEMU rig has none; the AM335x CPTS has).
func TestRealExtts(t *testing.T) {
	infos, err := Discover(DefaultPaths)
	if err != nil {
		t.Fatal(err)
	}
	tried := 0
	for _, info := range infos {
		d, err := Open(info.Device)
		if err != nil {
			t.Fatal(err)
		}
		caps := d.Caps()
		d.Close()
		for ch := 0; ch < caps.ExtTS; ch++ {
			x, err := OpenExtts(info.Device, ExttsChannel{Channel: ch, Pin: NoPin})
			if errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EBUSY) {
				t.Logf("%s channel %d: %v", info.Device, ch, err)
				continue
			}
			if err != nil {
				t.Fatalf("%s channel %d: %v", info.Device, ch, err)
			}
			tried++
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			n, err := x.Read(ctx, make([]ExttsEvent, 8))
			cancel()
			t.Logf("%s (%s) channel %d: strict %v masked %v: %d events, %v", info.Device, info.Name, ch, x.Strict(), x.Masked(), n, err)
			if err != nil && !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if tried == 0 {
		t.Skipf("no PHC with external timestamp channels this test may enable on this machine (%d PHCs)", len(infos))
	}
}
