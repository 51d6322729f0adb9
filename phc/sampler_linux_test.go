package phc

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"
	"unsafe"

	fbphc "github.com/facebook/time/phc"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// ioctlSize is the argument size encoded in an ioctl request number (_IOC_SIZE).
func ioctlSize(req uint) uintptr { return uintptr(req>>16) & 0x3fff }

// TestKernelStructLayouts checks that the structs passed to the kernel have the
// sizes the ioctl numbers encode, on every GOARCH the tests run on (CI also runs
// them as GOARCH=arm).
func TestKernelStructLayouts(t *testing.T) {
	for _, c := range []struct {
		name string
		req  uint
		size uintptr
	}{
		{"ptp_clock_caps", unix.PTP_CLOCK_GETCAPS2, unsafe.Sizeof(unix.PtpClockCaps{})},
		{"ptp_sys_offset", unix.PTP_SYS_OFFSET2, unsafe.Sizeof(unix.PtpSysOffset{})},
		{"ptp_sys_offset_extended", unix.PTP_SYS_OFFSET_EXTENDED2, unsafe.Sizeof(unix.PtpSysOffsetExtended{})},
		{"ptp_sys_offset_precise", unix.PTP_SYS_OFFSET_PRECISE2, unsafe.Sizeof(unix.PtpSysOffsetPrecise{})},
		{"ptp_pin_desc", unix.PTP_PIN_GETFUNC2, unsafe.Sizeof(unix.PtpPinDesc{})},
	} {
		if got := ioctlSize(c.req); got != c.size {
			t.Errorf("%s: Go struct is %d bytes, ioctl 0x%x encodes %d", c.name, c.size, c.req, got)
		}
	}
	var x unix.PtpSysOffsetExtended
	if off := unsafe.Offsetof(x.Ts); off != 16 {
		t.Errorf("ptp_sys_offset_extended.ts at offset %d, uapi has 16", off)
	}
	if unsafe.Sizeof(unix.PtpClockTime{}) != 16 {
		t.Errorf("ptp_clock_time is %d bytes, uapi has 16", unsafe.Sizeof(unix.PtpClockTime{}))
	}
}

// goldenExtended is a PTP_SYS_OFFSET_EXTENDED reply as the kernel lays it out:
// n_samples, clockid, rsv[2], then n × {sys, phc, sys} ptp_clock_time records
// (s64 sec, u32 nsec, u32 reserved), little-endian. Three samples against
// MONOTONIC_RAW; the second has the narrowest window (400 ns).
func goldenExtended() []byte {
	b := make([]byte, unsafe.Sizeof(unix.PtpSysOffsetExtended{}))
	le := binary.LittleEndian
	le.PutUint32(b[0:], 3)
	le.PutUint32(b[4:], unix.CLOCK_MONOTONIC_RAW)
	ts := [][3][2]int64{
		{{1000, 100_000}, {1037, 100_600}, {1000, 101_100}},
		{{1000, 200_000}, {1037, 200_500}, {1000, 200_400}},
		{{1000, 300_000}, {1037, 300_700}, {1000, 300_900}},
	}
	off := 16
	for _, s := range ts {
		for _, c := range s {
			le.PutUint64(b[off:], uint64(c[0]))
			le.PutUint32(b[off+8:], uint32(c[1]))
			off += 16
		}
	}
	return b
}

func TestBestExtendedGolden(t *testing.T) {
	raw := goldenExtended()
	x := (*unix.PtpSysOffsetExtended)(unsafe.Pointer(&raw[0]))
	var r Reading
	if !bestExtended(x, timebase.DomainMonotonicRaw, &r) {
		t.Fatal("golden sample rejected")
	}
	want := Reading{SysNS: 1000_000_200_200, PHCNS: 1037_000_200_500, SysDomain: timebase.DomainMonotonicRaw,
		OffsetNS: -37_000_000_300, DelayNS: 400, Samples: 3, Method: MethodExtended}
	if r != want {
		t.Fatalf("got  %+v\nwant %+v", r, want)
	}
	// facebook/time's BestSample implements the same estimator on time.Time.
	fb := (*fbphc.PTPSysOffsetExtended)(unsafe.Pointer(&raw[0])).BestSample()
	if fb.Offset != time.Duration(want.OffsetNS) || fb.Delay != time.Duration(want.DelayNS) {
		t.Fatalf("facebook/time gives offset %v delay %v", fb.Offset, fb.Delay)
	}
}

func TestBestBasicAndPrecise(t *testing.T) {
	var b unix.PtpSysOffset
	b.Samples = 2
	// sys, phc, sys, phc, sys
	for i, v := range []int64{10_000, 5_000_300, 10_900, 5_001_000, 11_200} {
		b.Ts[i] = unix.PtpClockTime{Sec: v / 1e9, Nsec: uint32(v % 1e9)}
	}
	var r Reading
	if !bestBasic(&b, &r) || r.DelayNS != 300 || r.SysNS != 11_050 || r.PHCNS != 5_001_000 || r.SysDomain != timebase.DomainRealtime {
		t.Fatalf("basic: %+v", r)
	}
	p := unix.PtpSysOffsetPrecise{
		Device:   unix.PtpClockTime{Sec: 50, Nsec: 7},
		Realtime: unix.PtpClockTime{Sec: 13, Nsec: 9},
		Monoraw:  unix.PtpClockTime{Sec: 2, Nsec: 1},
	}
	if !fromPrecise(&p, timebase.DomainMonotonicRaw, &r) || r.OffsetNS != -48_000_000_006 || r.DelayNS != 0 || r.Method != MethodPrecise {
		t.Fatalf("precise: %+v", r)
	}
	if fromPrecise(&p, timebase.DomainTAI, &r) {
		t.Fatal("precise accepted TAI")
	}
}

func TestBestExtendedRejectsGarbage(t *testing.T) {
	var x unix.PtpSysOffsetExtended
	var r Reading
	for _, n := range []uint32{0, 26, 1 << 31} {
		x.Samples = n
		if bestExtended(&x, timebase.DomainRealtime, &r) {
			t.Errorf("n_samples %d accepted", n)
		}
	}
	x.Samples = 1 // a system clock step inside the read: t2 < t1
	x.Ts[0] = [3]unix.PtpClockTime{{Sec: 5}, {Sec: 6}, {Sec: 4}}
	if bestExtended(&x, timebase.DomainRealtime, &r) {
		t.Error("a window with t2 < t1 was used")
	}
}

// fakePHC is a PHC 37 s ahead of the system clocks with configurable refusals.
type fakePHC struct {
	capsv       unix.PtpClockCaps
	refuse      map[string]error
	calls       map[string]int
	knowsClocks bool // kernel honours clockid in PTP_SYS_OFFSET_EXTENDED (6.13+)
	now         int64
}

func newFake() *fakePHC {
	return &fakePHC{refuse: map[string]error{}, calls: map[string]int{}, knowsClocks: true, now: 1_000_000_000_000}
}

func (f *fakePHC) tick() unix.PtpClockTime {
	f.now += 250
	return unix.PtpClockTime{Sec: f.now / 1e9, Nsec: uint32(f.now % 1e9)}
}

func (f *fakePHC) phcTime() unix.PtpClockTime {
	p := f.now + 37e9
	return unix.PtpClockTime{Sec: p / 1e9, Nsec: uint32(p % 1e9)}
}

func (f *fakePHC) caps(c *unix.PtpClockCaps) error { *c = f.capsv; return nil }
func (f *fakePHC) sysOffsetExtended(x *unix.PtpSysOffsetExtended) error {
	f.calls["extended"]++
	if err := f.refuse["extended"]; err != nil {
		return err
	}
	if x.Clockid != 0 && !f.knowsClocks {
		return classify("PTP_SYS_OFFSET_EXTENDED", unix.EINVAL)
	}
	for i := 0; i < int(x.Samples); i++ {
		a := f.tick()
		f.now += 100
		p := f.phcTime()
		x.Ts[i] = [3]unix.PtpClockTime{a, p, f.tick()}
	}
	return nil
}
func (f *fakePHC) sysOffset(x *unix.PtpSysOffset) error {
	f.calls["basic"]++
	if err := f.refuse["basic"]; err != nil {
		return err
	}
	x.Ts[0] = f.tick()
	for i := 0; i < int(x.Samples); i++ {
		f.now += 100
		x.Ts[2*i+1] = f.phcTime()
		x.Ts[2*i+2] = f.tick()
	}
	return nil
}
func (f *fakePHC) sysOffsetPrecise(x *unix.PtpSysOffsetPrecise) error {
	f.calls["precise"]++
	if err := f.refuse["precise"]; err != nil {
		return err
	}
	t := f.tick()
	*x = unix.PtpSysOffsetPrecise{Device: f.phcTime(), Realtime: t, Monoraw: t}
	return nil
}
func (f *fakePHC) pin(p *unix.PtpPinDesc) error {
	copy(p.Name[:], fmt.Sprintf("SDP%d", p.Index))
	p.Func, p.Chan = unix.PTP_PF_EXTTS, p.Index
	return nil
}
func (f *fakePHC) close() error { return nil }

func (f *fakePHC) readSys(timebase.SystemClock) (int64, error) { f.now += 50; return f.now, nil }

func TestSamplerChoosesAndDegrades(t *testing.T) {
	unsupported := classify("x", unix.EOPNOTSUPP)
	cases := []samplerCase{
		{"cross-timestamp", true, MethodAuto, nil, true, timebase.DomainMonotonicRaw, MethodPrecise, false, 0},
		{"extended-by-default", false, MethodAuto, nil, true, timebase.DomainMonotonicRaw, MethodExtended, false, 0},
		{"precise-refused", true, MethodAuto, []string{"precise"}, true, timebase.DomainRealtime, MethodExtended, false, 1},
		{"old-kernel-raw", false, MethodAuto, nil, false, timebase.DomainMonotonicRaw, MethodExtended, true, 1},
		{"only-basic", false, MethodAuto, []string{"extended"}, true, timebase.DomainRealtime, MethodBasic, false, 1},
		{"only-basic-raw", false, MethodAuto, []string{"extended"}, true, timebase.DomainMonotonicRaw, MethodBasic, true, 2},
		{"configured-basic", false, MethodBasic, nil, true, timebase.DomainRealtime, MethodBasic, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake()
			f.capsv.Cross_timestamping = map[bool]int32{true: 1}[c.cross]
			f.knowsClocks = c.knowsClocks
			for _, m := range c.refuse {
				f.refuse[m] = unsupported
			}
			d, err := newDevice("/dev/ptp0", 0, f)
			if err != nil {
				t.Fatal(err)
			}
			s := newSampler(f, d.caps, 5, c.prefer, f.readSys)
			var r Reading
			if err := s.Sample(c.sys, &r); err != nil {
				t.Fatal(err)
			}
			if r.Method != c.wantMethod || r.SysDomain != c.sys || (r.BracketNS != 0) != c.wantBracket || s.Fallbacks() != c.wantFallbk {
				t.Fatalf("reading %+v, fallbacks %d", r, s.Fallbacks())
			}
			// The fake PHC is 37 s ahead; the estimate must be within the window.
			if e := r.OffsetNS + 37e9; e < -r.DelayNS || e > r.DelayNS {
				t.Fatalf("offset %d is not -37 s within the %d ns window", r.OffsetNS, r.DelayNS)
			}
			// A refusal is remembered: the refused method is not tried again.
			before := f.calls[c.refuseFirst()]
			s.Sample(c.sys, &r)
			if c.refuseFirst() != "" && f.calls[c.refuseFirst()] != before {
				t.Fatalf("refused method %s was tried again", c.refuseFirst())
			}
			if len(c.refuse) > 0 && len(s.Refusals()) == 0 {
				t.Fatal("no refusal reason reported")
			}
		})
	}
}

func (c samplerCase) refuseFirst() string {
	if len(c.refuse) == 0 {
		return ""
	}
	return c.refuse[0]
}

type samplerCase struct {
	name        string
	cross       bool
	prefer      Method
	refuse      []string
	knowsClocks bool
	sys         timebase.Domain
	wantMethod  Method
	wantBracket bool
	wantFallbk  uint64
}

func TestMaxSamplesMatchesUAPI(t *testing.T) {
	if MaxSamples != unix.PTP_MAX_SAMPLES {
		t.Fatalf("MaxSamples %d, uapi PTP_MAX_SAMPLES %d", MaxSamples, unix.PTP_MAX_SAMPLES)
	}
}
