package timeapi

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
)

// Writer is the agent's side of a segment: it publishes one model per clock.
// Its methods are safe for concurrent use.
type Writer struct {
	path  string
	seg   segment
	close func() error // unmaps and releases the file
	n     int

	mu     sync.Mutex
	closed bool
	rel    [MaxSections]relation
}

// relation follows REALTIME − MONOTONIC_RAW across a section's publishes to
// find REALTIME steps for Past.
type relation struct {
	have           bool
	base, rt       int64 // the last publish's BaseNS and RealtimeNS
	from, to, size int64 // the last step seen: after base from, by base to, of size ns
}

// Create opens the segment at path (creating it with mode if it does not exist)
// and publishes the sections named by clocks, all UNKNOWN until their first
// Publish. An existing file is rewritten in place, never unlinked, so a reader
// that kept it mapped across an agent restart sees the new writer's data
// without reopening. Only one Writer may hold a path (an exclusive flock).
func Create(path string, mode os.FileMode, clocks []string) (*Writer, error) {
	if err := checkClocks(clocks); err != nil {
		return nil, fmt.Errorf("time segment %s: %w", path, err)
	}
	seg, closeFn, err := createFile(path, mode)
	if err != nil {
		return nil, fmt.Errorf("time segment %s: %w", path, err)
	}
	w := &Writer{path: path, seg: seg, close: closeFn, n: len(clocks)}
	w.initialise(clocks, os.Getpid())
	return w, nil
}

func checkClocks(clocks []string) error {
	if len(clocks) == 0 || len(clocks) > MaxSections {
		return fmt.Errorf("%d clocks, want 1 to %d", len(clocks), MaxSections)
	}
	for i, c := range clocks {
		if !printable(c) {
			return fmt.Errorf("clock name %q: want 1 to %d printable ASCII characters without spaces", c, MaxNameLen)
		}
		for _, d := range clocks[:i] {
			if d == c {
				return fmt.Errorf("clock %q named twice", c)
			}
		}
	}
	return nil
}

// initialise (re)writes the header and every section: the header's epoch is
// odd meanwhile, and each section's sequence too, so a reader mapped from an
// earlier writer gets ErrNotInitialised or retries, never a mix.
func (w *Writer) initialise(clocks []string, pid int) {
	h := &w.seg.header
	e := (h.epoch.Load() | 1) + 2 // odd, and not the value any reader saw before
	h.epoch.Store(e)
	h.magic.Store(Magic)
	h.version.Store(LayoutVersion)
	h.headerSize.Store(HeaderSize)
	h.segmentSize.Store(SegmentSize)
	h.sectionSize.Store(SectionSize)
	h.sectionCount.Store(uint32(len(clocks)))
	h.writerPID.Store(uint32(pid))
	for i := range w.seg.sections {
		s := &w.seg.sections[i]
		q := (s.seq.Load() | 1) + 2
		s.seq.Store(q)
		var w0, w1 uint64
		if i < len(clocks) {
			w0, w1, _ = nameWords(clocks[i])
		}
		s.name[0].Store(w0)
		s.name[1].Store(w1)
		s.state.Store(uint32(Unknown))
		for _, f := range [...]*atomic.Int64{&s.baseNS, &s.trueNS, &s.ratePPB, &s.boundNS, &s.growthPPB,
			&s.voidNS, &s.realtimeNS, &s.stepFromNS, &s.stepToNS, &s.stepNS} {
			f.Store(0) // the update counter carries on across restarts
		}
		s.seq.Store(q + 1)
	}
	h.epoch.Store(e + 1)
}

// Sections returns the number of published clocks.
func (w *Writer) Sections() int { return w.n }

// Publish writes section i's model (i is the clock's index in Create's list).
// It allocates nothing; a reader sees either the previous model or this one.
func (w *Writer) Publish(i int, m Model) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.writable("Publish", i) {
		return
	}
	r := &w.rel[i]
	if m.RealtimeNS != 0 {
		if r.have && m.BaseNS > r.base {
			dt := m.BaseNS - r.base
			change := (m.RealtimeNS - m.BaseNS) - (r.rt - r.base)
			if abs(change) > growNS(dt, SlewPPB)+StepSlackNS {
				r.from, r.to, r.size = r.base, m.BaseNS, change
			}
		}
		r.have, r.base, r.rt = true, m.BaseNS, m.RealtimeNS
	}
	s := &w.seg.sections[i]
	q := s.seq.Load() | 1 // odd: being written
	s.seq.Store(q)
	s.state.Store(uint32(m.State))
	s.baseNS.Store(m.BaseNS)
	s.trueNS.Store(m.TrueNS)
	s.ratePPB.Store(m.RatePPB)
	s.boundNS.Store(m.BoundNS)
	s.growthPPB.Store(m.GrowthPPB)
	s.voidNS.Store(m.VoidNS)
	s.realtimeNS.Store(m.RealtimeNS)
	s.stepFromNS.Store(r.from)
	s.stepToNS.Store(r.to)
	s.stepNS.Store(r.size)
	s.updates.Add(1)
	s.seq.Store(q + 1)
}

// Void makes section i void at once (its readers get ErrVoid), keeping the
// rest of its model for diagnosis.
func (w *Writer) Void(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.writable("Void", i) {
		return
	}
	s := &w.seg.sections[i]
	q := s.seq.Load() | 1
	s.seq.Store(q)
	s.voidNS.Store(0)
	s.updates.Add(1)
	s.seq.Store(q + 1)
}

// writable reports whether section i may be written now (w.mu held); an index
// out of range is the caller's bug.
func (w *Writer) writable(op string, i int) bool {
	if i < 0 || i >= w.n {
		panic(fmt.Sprintf("timeapi: %s of section %d of %d", op, i, w.n))
	}
	return !w.closed
}

// Close unmaps the segment and releases the file. The sections stay as last
// published: readers see their bounds grow until VoidNS, then ErrVoid; a new
// Create on the same path takes over.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	if err := w.close(); err != nil {
		return fmt.Errorf("time segment %s: %w", w.path, err)
	}
	return nil
}

// printable reports whether a clock name is 1 to MaxNameLen printable ASCII
// characters without spaces.
func printable(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
