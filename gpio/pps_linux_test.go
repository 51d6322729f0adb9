package gpio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ppsIoctl encodes PPS ioctl nr the asm-generic way for a pointer of ptrSize
// bytes, as linux/pps.h declares them (_IOR('p', 0xa1, int *) etc.).
func ppsIoctl(dir, nr, ptrSize uint) uint { return dir<<30 | ptrSize<<16 | 'p'<<8 | nr }

// The PPS ioctl numbers hold sizeof(void *): both values are read off a
// 32-bit ARM and an amd64 build of linux/pps.h.
func TestPPSIoctlNumbers(t *testing.T) {
	for _, tc := range []struct {
		name           string
		dir, nr        uint
		arm32, amd64   uint
		ours, fromXSys uint
	}{
		{"PPS_GETPARAMS", iocRead, 0xa1, 0x800470a1, 0x800870a1, ioctlPPSGetParams, unix.PPS_GETPARAMS},
		{"PPS_GETCAP", iocRead, 0xa3, 0x800470a3, 0x800870a3, ioctlPPSGetCap, unix.PPS_GETCAP},
		{"PPS_FETCH", iocRead | iocWrite, 0xa4, 0xc00470a4, 0xc00870a4, ioctlPPSFetch, unix.PPS_FETCH},
	} {
		if got := ppsIoctl(tc.dir, tc.nr, 4); got != tc.arm32 {
			t.Errorf("%s for 4-byte pointers = %#x, want %#x", tc.name, got, tc.arm32)
		}
		if got := ppsIoctl(tc.dir, tc.nr, 8); got != tc.amd64 {
			t.Errorf("%s for 8-byte pointers = %#x, want %#x", tc.name, got, tc.amd64)
		}
		if tc.ours != tc.fromXSys {
			t.Errorf("%s on %d-byte pointers: ours %#x, x/sys %#x", tc.name, ptrSize, tc.ours, tc.fromXSys)
		}
		want := tc.amd64
		if ptrSize == 4 {
			want = tc.arm32
		}
		if tc.ours != want {
			t.Errorf("%s = %#x, want %#x for %d-byte pointers", tc.name, tc.ours, want, ptrSize)
		}
	}
}

// Sizes and offsets against x/sys (cgo -godefs of linux/pps.h); the test
// runs as linux/arm under qemu-arm too, where Go aligns int64 to 4 bytes and
// only x/sys's explicit padding keeps pps_kinfo at 48.
func TestPPSStructLayout(t *testing.T) {
	var (
		kt unix.PPSKTime
		ki unix.PPSKInfo
		fd unix.PPSFData
		kp unix.PPSKParams
	)
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof pps_ktime", unsafe.Sizeof(kt), PPSKTimeSize},
		{"pps_ktime.sec", unsafe.Offsetof(kt.Sec), ktSec},
		{"pps_ktime.nsec", unsafe.Offsetof(kt.Nsec), ktNsec},
		{"pps_ktime.flags", unsafe.Offsetof(kt.Flags), ktFlags},
		{"sizeof pps_kinfo", unsafe.Sizeof(ki), PPSKInfoSize},
		{"pps_kinfo.assert_sequence", unsafe.Offsetof(ki.Assert_sequence), kiAssertSeq},
		{"pps_kinfo.clear_sequence", unsafe.Offsetof(ki.Clear_sequence), kiClearSeq},
		{"pps_kinfo.assert_tu", unsafe.Offsetof(ki.Assert_tu), kiAssertTU},
		{"pps_kinfo.clear_tu", unsafe.Offsetof(ki.Clear_tu), kiClearTU},
		{"pps_kinfo.current_mode", unsafe.Offsetof(ki.Current_mode), kiMode},
		{"sizeof pps_fdata", unsafe.Sizeof(fd), PPSFDataSize},
		{"pps_fdata.timeout", unsafe.Offsetof(fd.Timeout), fdTimeout},
		{"sizeof pps_kparams", unsafe.Sizeof(kp), ppsKParamSize},
		{"pps_kparams.api_version", unsafe.Offsetof(kp.Api_version), kpAPIVersion},
		{"pps_kparams.mode", unsafe.Offsetof(kp.Mode), kpMode},
		// Read off linux/pps.h (EABI: __s64 aligned to 8).
		{"pps_kinfo.clear_tu (header)", kiClearTU, 24},
		{"pps_kinfo.current_mode (header)", kiMode, 40},
		{"pps_fdata.timeout (header)", fdTimeout, 48},
	} {
		if f.got != f.want {
			t.Errorf("%s = %d, want %d", f.name, f.got, f.want)
		}
	}
}

// fakePPS answers the PPS ioctls as the kernel's pps.c does: GETCAP and
// GETPARAMS from fixed values, FETCH with the latest of the records pushed
// into edges, waiting for a new one up to the timeout the caller put in
// pps_fdata (a zero timeout returns at once). err, when set, answers every
// ioctl.
type fakePPS struct {
	caps, mode PPSMode
	err        error
	edges      chan []byte // pps_kinfo records, in the kernel's encoding
	latest     [PPSKInfoSize]byte
	fetches    int
	waits      []time.Duration
}

func (f *fakePPS) ioctl(req uint, arg unsafe.Pointer) error {
	if f.err != nil {
		return f.err
	}
	switch req {
	case ioctlPPSGetCap:
		*(*int32)(arg) = int32(f.caps)
	case ioctlPPSGetParams:
		b := unsafe.Slice((*byte)(arg), ppsKParamSize)
		clear(b)
		b[kpAPIVersion] = 1
		*(*int32)(unsafe.Pointer(&b[kpMode])) = int32(f.mode)
	case ioctlPPSFetch:
		f.fetches++
		b := unsafe.Slice((*byte)(arg), PPSFDataSize)
		wait, err := ktimeNS(b[fdTimeout:])
		if err != nil {
			return unix.EINVAL
		}
		f.waits = append(f.waits, time.Duration(wait))
		got := false
		for !got {
			select {
			case r := <-f.edges:
				copy(f.latest[:], r)
				got = true
			default:
				if wait == 0 {
					copy(b, f.latest[:])
					return nil
				}
				select {
				case r := <-f.edges:
					copy(f.latest[:], r)
					got = true
				case <-time.After(time.Duration(wait)):
					return unix.ETIMEDOUT
				}
			}
		}
		// Drain what is queued: the kernel keeps only the latest.
		for drained := false; !drained; {
			select {
			case r := <-f.edges:
				copy(f.latest[:], r)
			default:
				drained = true
			}
		}
		copy(b, f.latest[:])
	default:
		return unix.ENOTTY
	}
	return nil
}

const ppsAllCaps = PPSCaptureAssert | PPSCaptureClear | PPSOffsetAssert | PPSOffsetClear | PPSCanWait | PPSTSFmtTSpec

func TestPPSOpenBadInput(t *testing.T) {
	for _, tc := range []struct {
		name        string
		dev         *fakePPS
		cfg         PPSConfig
		want        []string
		unsupported bool
	}{
		{"not a pps device", &fakePPS{err: unix.ENOTTY}, PPSConfig{Assert: true}, []string{"/dev/pps9", "PPS_GETCAP", "not a PPS device"}, false},
		{"emulator", &fakePPS{err: unix.ENOSYS}, PPSConfig{Assert: true}, []string{"/dev/pps9", "not implemented"}, true}, // ENOSYS is errors.ErrUnsupported
		{"permission", &fakePPS{err: unix.EACCES}, PPSConfig{Assert: true}, []string{"/dev/pps9", "permission denied"}, false},
		{"no clear capture", &fakePPS{caps: PPSCaptureAssert | PPSCanWait, mode: PPSCaptureAssert}, PPSConfig{Assert: true, Clear: true},
			[]string{"/dev/pps9", "no clear capture", "cannot capture clear edges", "capture_assert|can_wait"}, true},
		{"clear not enabled", &fakePPS{caps: ppsAllCaps, mode: PPSCaptureAssert}, PPSConfig{Clear: true},
			[]string{"/dev/pps9", "no clear capture", "PPS_SETPARAMS"}, true},
		{"cannot wait", &fakePPS{caps: PPSCaptureAssert, mode: PPSCaptureAssert}, PPSConfig{Assert: true},
			[]string{"/dev/pps9", "cannot wait"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newPPSDevice("/dev/pps9", tc.dev, tc.cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if errors.Is(err, ErrUnsupported) != tc.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v", err, !tc.unsupported)
			}
		})
	}
	if _, err := OpenPPS(filepath.Join(t.TempDir(), "pps7"), PPSConfig{Assert: true}); err == nil || !strings.Contains(err.Error(), "no such device") {
		t.Errorf("missing device: %v", err)
	}
}

func TestPPSFetch(t *testing.T) {
	f := &fakePPS{caps: ppsAllCaps, mode: ppsAllCaps &^ PPSCanWait, edges: make(chan []byte, 16)}
	d, err := newPPSDevice("/dev/pps0", f, PPSConfig{Assert: true, Clear: true})
	if err != nil {
		t.Fatal(err)
	}
	if in := d.Info(); !in.CanAssert() || !in.CanClear() || in.APIVersion != 1 {
		t.Fatalf("info %+v", in)
	}
	const s = int64(1e9)
	push := func(a, c uint32) {
		f.edges <- AppendPPSKInfo(nil, PPSEvent{AssertSeq: a, ClearSeq: c, AssertNS: int64(a) * s, ClearNS: int64(c)*s + s/5, Mode: f.mode})
	}
	push(10, 9) // stamped before the reader started: the baseline
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() {
		time.Sleep(150 * time.Millisecond) // past one 100 ms wait
		push(11, 9)
	}()
	e, lost, err := d.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !e.NewAssert || e.NewClear || lost != 0 || e.AssertSeq != 11 || e.AssertNS != 11*s {
		t.Fatalf("first fetch %+v lost %d", e, lost)
	}
	// Three asserts and three clears stamped while nobody fetched: the device
	// keeps the latest of each, two of each are lost.
	push(12, 10)
	push(13, 11)
	push(14, 12)
	e, lost, err = d.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !e.NewAssert || !e.NewClear || lost != 4 || e.AssertSeq != 14 || e.ClearSeq != 12 || e.ClearNS != 12*s+s/5 {
		t.Fatalf("second fetch %+v lost %d, want 14/12 and 4 lost (asserts 12, 13; clears 10, 11)", e, lost)
	}
	ra, rc := d.Tracker().Received()
	la, lc := d.Tracker().Lost()
	if ra+la != 4 || rc+lc != 3 {
		t.Errorf("received+lost = %d assert, %d clear; want 4 and 3 edges after the baseline", ra+la, rc+lc)
	}
	for i, w := range f.waits {
		if w > pollInterval {
			t.Errorf("a PPS_FETCH waited %v, more than %v", w, pollInterval)
		}
		// After a wait that timed out comes a look without waiting, so an
		// edge stamped between two waits is not held back a whole second.
		if i > 0 && w != 0 && f.waits[i-1] != 0 {
			t.Errorf("PPS_FETCH waits %v: two waits in a row without a look between", f.waits)
			break
		}
	}

	// A cancelled context ends the wait within about one poll interval.
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	start := time.Now()
	if _, _, err := d.Fetch(ctx2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want deadline exceeded", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("cancelled fetch took %v", el)
	}
}

func TestPPSFetchAllocs(t *testing.T) {
	f := &fakePPS{caps: ppsAllCaps, mode: ppsAllCaps, edges: make(chan []byte, 1)}
	d, err := newPPSDevice("/dev/pps0", f, PPSConfig{Assert: true})
	if err != nil {
		t.Fatal(err)
	}
	f.waits = make([]time.Duration, 0, 1024)
	recs := make([][]byte, 200)
	for i := range recs {
		recs[i] = AppendPPSKInfo(nil, PPSEvent{AssertSeq: uint32(i + 1), AssertNS: int64(i+1) * 1e9})
	}
	d.Tracker().Baseline(&PPSEvent{}) // each run's edge is new: no wait
	i := 0
	ctx := context.Background()
	n := testing.AllocsPerRun(50, func() {
		f.edges <- recs[i]
		i++
		if _, _, err := d.Fetch(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("Fetch allocates %v times", n)
	}
}

// TestPPSDevice reads a real PPS source where one exists (pps-ktimer or a
// pps-gpio on the board): one assert within 3 s.
func TestPPSDevice(t *testing.T) {
	paths, _ := filepath.Glob("/dev/pps*")
	if len(paths) == 0 {
		t.Skip("no /dev/pps* on this machine (load pps-ktimer or a pps-gpio overlay to run it)")
	}
	d, err := OpenPPS(paths[0], PPSConfig{Assert: true})
	switch {
	case err != nil && errors.Is(err, unix.ENOSYS):
		t.Skipf("PPS ioctls not implemented here (qemu-user): %v", err)
	case err != nil && (errors.Is(err, os.ErrPermission) || errors.Is(err, unix.EACCES)):
		t.Skipf("cannot open %s: %v", paths[0], err)
	case err != nil:
		t.Fatal(err)
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	e, _, err := d.Fetch(ctx)
	if err != nil {
		t.Fatalf("%s: %v", paths[0], err)
	}
	if !e.NewAssert || e.AssertNS <= 0 {
		t.Fatalf("%s: fetched %+v", paths[0], e)
	}
}
