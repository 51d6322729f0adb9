//go:build linux

package phc

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/timebase"
)

// BenchmarkSysoffDecode decodes one PTP_SYS_OFFSET_EXTENDED result (best of the
// samples, read window midpoint).
func BenchmarkSysoffDecode(b *testing.B) {
	raw := goldenExtended()
	x := (*unix.PtpSysOffsetExtended)(unsafe.Pointer(&raw[0]))
	x.Samples = 9
	for i := 3; i < 9; i++ {
		x.Ts[i] = x.Ts[i%3]
	}
	var r Reading
	b.ReportAllocs()
	for b.Loop() {
		if !bestExtended(x, timebase.DomainMonotonicRaw, &r) {
			b.Fatal("rejected")
		}
	}
}

// BenchmarkSamplerFake is the sampler's own cost per reading (the ioctl is a fake).
func BenchmarkSamplerFake(b *testing.B) {
	f := newFake()
	s := newSampler(f, Caps{}, 9, MethodAuto, f.readSys)
	var r Reading
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sample(timebase.DomainMonotonicRaw, &r); err != nil {
			b.Fatal(err)
		}
	}
}
