package ring

import (
	"fmt"
	"sync/atomic"
)

// cacheLine keeps the producer's and the consumer's indices on lines of
// their own (64 bytes on the Cortex-A8 and on x86).
const cacheLine = 64

// Ring holds up to Cap records of type T. Records are copied in and out; a
// record holding pointers keeps what they point to alive until its slot is
// written again (records here are plain values: timestamps and readings).
type Ring[T any] struct {
	buf  []T
	mask uint64

	_    [cacheLine]byte
	head atomic.Uint64 // records put so far (the producer's)
	// dropped counts records the producer could not put (written by the
	// producer only, read by anyone).
	dropped atomic.Uint64
	_       [cacheLine - 16]byte
	tail    atomic.Uint64 // records taken so far (the consumer's)
	_       [cacheLine - 8]byte
}

// New returns a ring of capacity records, a power of two.
func New[T any](capacity int) (*Ring[T], error) {
	if capacity < 1 || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("ring: capacity %d is not a power of two", capacity)
	}
	return &Ring[T]{buf: make([]T, capacity), mask: uint64(capacity - 1)}, nil
}

// Cap is the capacity.
func (r *Ring[T]) Cap() int { return len(r.buf) }

// Len is how many records wait for the consumer (a snapshot).
func (r *Ring[T]) Len() int { return int(r.head.Load() - r.tail.Load()) }

// Dropped is how many records the producer could not put since New.
func (r *Ring[T]) Dropped() uint64 { return r.dropped.Load() }

// Put adds one record; false (and counted) when the ring is full. Producer only.
func (r *Ring[T]) Put(v T) bool {
	h := r.head.Load()
	if h-r.tail.Load() == uint64(len(r.buf)) {
		r.dropped.Add(1)
		return false
	}
	r.buf[h&r.mask] = v
	r.head.Store(h + 1) // publishes the record
	return true
}

// PutBatch adds as many of vs as fit and counts the rest dropped; it returns
// how many it put. Producer only.
func (r *Ring[T]) PutBatch(vs []T) int {
	h := r.head.Load()
	free := uint64(len(r.buf)) - (h - r.tail.Load())
	n := min(uint64(len(vs)), free)
	for i := uint64(0); i < n; i++ {
		r.buf[(h+i)&r.mask] = vs[i]
	}
	r.head.Store(h + n)
	if lost := uint64(len(vs)) - n; lost > 0 {
		r.dropped.Add(lost)
	}
	return int(n)
}

// Get moves up to len(out) records into out, oldest first, and returns how
// many. Consumer only.
func (r *Ring[T]) Get(out []T) int {
	t := r.tail.Load()
	n := min(uint64(len(out)), r.head.Load()-t)
	for i := uint64(0); i < n; i++ {
		out[i] = r.buf[(t+i)&r.mask]
	}
	r.tail.Store(t + n) // frees the slots
	return int(n)
}
