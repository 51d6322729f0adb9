package timeapi

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// segment is the mapped file. Every access is a sync/atomic load or store of
// an aligned 32- or 64-bit word (the mapping is page-aligned and every offset
// is a multiple of the word's size), so the Go memory model, the race detector
// and 32-bit ARM all see whole words in a defined order.
type segment []byte

func (s segment) u32(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s[off : off+4][0]))
}

func (s segment) u64(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s[off : off+8][0]))
}

func (s segment) i64(off int) *atomic.Int64 {
	return (*atomic.Int64)(unsafe.Pointer(&s[off : off+8][0]))
}

func sectionOff(i int) int { return HeaderSize + i*SectionSize }

// nameWords returns a clock name as the two native-endian words it is stored
// as (NUL-padded to 16 bytes); ok is false for a name that cannot be stored.
func nameWords(name string) (w0, w1 uint64, ok bool) {
	if len(name) == 0 || len(name) > MaxNameLen {
		return 0, 0, false
	}
	var b [16]byte
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c <= ' ' || c > '~' {
			return 0, 0, false
		}
		b[i] = c
	}
	return binary.NativeEndian.Uint64(b[0:8]), binary.NativeEndian.Uint64(b[8:16]), true
}

// nameOf decodes a stored name (for messages and listings, not hot paths).
func nameOf(w0, w1 uint64) string {
	var b [16]byte
	binary.NativeEndian.PutUint64(b[0:8], w0)
	binary.NativeEndian.PutUint64(b[8:16], w1)
	n := 0
	for n < len(b) && b[n] != 0 {
		n++
	}
	return string(b[:n])
}

// snapshot is one consistent read of a section.
type snapshot struct {
	Model
	updates                  uint64
	stepFrom, stepTo, stepNS int64
}

// load reads section i once without the seqlock check (the caller brackets
// it with the sequence).
func (s segment) load(i int, out *snapshot) {
	o := sectionOff(i)
	out.State = State(s.u32(o + offState).Load())
	out.BaseNS = s.i64(o + offBaseNS).Load()
	out.TrueNS = s.i64(o + offTrueNS).Load()
	out.RatePPB = s.i64(o + offRatePPB).Load()
	out.BoundNS = s.i64(o + offBoundNS).Load()
	out.GrowthPPB = s.i64(o + offGrowthPPB).Load()
	out.VoidNS = s.i64(o + offVoidNS).Load()
	out.RealtimeNS = s.i64(o + offRealtimeNS).Load()
	out.updates = s.u64(o + offUpdates).Load()
	out.stepFrom = s.i64(o + offRTStepFromNS).Load()
	out.stepTo = s.i64(o + offRTStepToNS).Load()
	out.stepNS = s.i64(o + offRTStepNS).Load()
}
