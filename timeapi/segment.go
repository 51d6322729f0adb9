package timeapi

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// header and section mirror the layout (layout.go's offsets, checked by
// TestLayout with unsafe.Offsetof on every architecture). Every field is a
// sync/atomic type: each access is one atomic load or store of an aligned 32-
// or 64-bit word, so the Go memory model, the race detector and 32-bit ARM all
// see whole words in a defined order.
type header struct {
	magic        atomic.Uint64
	version      atomic.Uint32
	headerSize   atomic.Uint32
	segmentSize  atomic.Uint32
	sectionSize  atomic.Uint32
	sectionCount atomic.Uint32
	epoch        atomic.Uint32 // odd while the header is (re)initialised
	writerPID    atomic.Uint32
	_            [HeaderSize - 36]byte
}

type section struct {
	name       [2]atomic.Uint64 // NUL-padded ASCII
	seq        atomic.Uint32    // odd while written
	state      atomic.Uint32
	baseNS     atomic.Int64
	trueNS     atomic.Int64
	ratePPB    atomic.Int64
	boundNS    atomic.Int64
	growthPPB  atomic.Int64
	voidNS     atomic.Int64
	realtimeNS atomic.Int64
	updates    atomic.Uint64
	stepFromNS atomic.Int64 // the last REALTIME step the writer saw came after this base time
	stepToNS   atomic.Int64 // ... and by this one (0: none seen)
	stepNS     atomic.Int64 // its size: REALTIME − MONOTONIC_RAW after minus before
	_          [SectionSize - sectionUsed]byte
}

type layout struct {
	header
	sections [MaxSections]section
	_        [SegmentSize - HeaderSize - MaxSections*SectionSize]byte
}

// segment is the mapped file.
type segment struct {
	mem []byte // keeps the mapping's slice; the layout points into it
	*layout
}

// newSegment views a mapping (page-aligned, SegmentSize bytes) as the layout.
func newSegment(mem []byte) segment {
	return segment{mem: mem, layout: (*layout)(unsafe.Pointer(&mem[:SegmentSize][0]))}
}

// nameWords returns a clock name as the two native-endian words it is stored
// as (NUL-padded to 16 bytes); ok is false for a name no section can have.
// (Create checks names in full: printable ASCII without spaces.)
func nameWords(name string) (w0, w1 uint64, ok bool) {
	if len(name) == 0 || len(name) > MaxNameLen {
		return 0, 0, false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c == 0 {
			return 0, 0, false
		}
		shift := uint(i&7) * 8
		if bigEndian {
			shift = 56 - shift
		}
		if i < 8 {
			w0 |= uint64(c) << shift
		} else {
			w1 |= uint64(c) << shift
		}
	}
	return w0, w1, true
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
	stepFrom, stepTo, stepNS int64
}

// valid reports whether a snapshot is in the ranges a reader accepts.
func (s *snapshot) valid() bool {
	in := func(x int64) bool { return x >= -maxTimeNS && x <= maxTimeNS }
	return s.Model.valid() && in(s.stepFrom) && in(s.stepTo) && in(s.stepNS)
}

// load reads the section once without the seqlock check (the caller brackets
// it with the sequence); the REALTIME step only for Past.
func (s *section) load(out *snapshot, steps bool) {
	out.State = State(s.state.Load())
	out.BaseNS = s.baseNS.Load()
	out.TrueNS = s.trueNS.Load()
	out.RatePPB = s.ratePPB.Load()
	out.BoundNS = s.boundNS.Load()
	out.GrowthPPB = s.growthPPB.Load()
	out.VoidNS = s.voidNS.Load()
	out.RealtimeNS = s.realtimeNS.Load()
	if steps {
		out.stepFrom = s.stepFromNS.Load()
		out.stepTo = s.stepToNS.Load()
		out.stepNS = s.stepNS.Load()
	}
}
