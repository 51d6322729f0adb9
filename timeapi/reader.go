package timeapi

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/monagent/monagent/timebase"
)

// maxAttempts bounds a read's retries while the writer is mid-update (a
// writer holds a section odd for tens of nanoseconds; one descheduled there
// makes the read fail with ErrInconsistent rather than wait).
const maxAttempts = 1000

// Reader reads a segment. Its methods are safe for concurrent use and
// allocate nothing.
type Reader struct {
	path  string
	seg   segment
	close func() error
	// The clocks: MONOTONIC_RAW (the models' base), and the two Past converts from.
	raw, realtime, monotonic timebase.Clock
}

// DefaultPath is where readers look without a path: $MONAGENT_TIME_PATH if set,
// else time.shm in the agent's default runtime directory ($RUNTIME_DIRECTORY's
// first entry when set, else the temporary directory, $TMPDIR or /tmp).
func DefaultPath() string {
	if p := os.Getenv("MONAGENT_TIME_PATH"); p != "" {
		return p
	}
	dir := os.TempDir()
	if d := os.Getenv("RUNTIME_DIRECTORY"); d != "" {
		for i := 0; i < len(d); i++ {
			if d[i] == ':' {
				d = d[:i]
				break
			}
		}
		dir = d
	}
	return dir + string(os.PathSeparator) + "time.shm"
}

// Open maps the segment at path read-only ("" means DefaultPath). It fails with
// ErrNotInitialised for a file still being created, ErrMalformed or ErrVersion
// for one that is not a segment this package reads.
func Open(path string) (*Reader, error) {
	if path == "" {
		path = DefaultPath()
	}
	seg, closeFn, err := openFile(path)
	if err != nil {
		return nil, fmt.Errorf("time segment %s: %w", path, err)
	}
	r := newReader(path, seg, closeFn, rawClock(), realtimeClock(), monotonicClock())
	if err := r.checkHeader(); err != nil && !errors.Is(err, ErrNotInitialised) {
		closeFn()
		return nil, fmt.Errorf("time segment %s: %w", path, err)
	}
	return r, nil
}

func newReader(path string, seg segment, closeFn func() error, raw, rt, mono timebase.Clock) *Reader {
	return &Reader{path: path, seg: seg, close: closeFn, raw: raw, realtime: rt, monotonic: mono}
}

// Close unmaps the segment; the Reader must not be used afterwards.
func (r *Reader) Close() error {
	if err := r.close(); err != nil {
		return fmt.Errorf("time segment %s: %w", r.path, err)
	}
	return nil
}

// Clocks lists the published clocks' names (it allocates; for tools, not hot paths).
func (r *Reader) Clocks() ([]string, error) {
	if err := r.checkHeader(); err != nil {
		return nil, err
	}
	n := int(r.seg.sectionCount.Load())
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		s := &r.seg.sections[i]
		names = append(names, nameOf(s.name[0].Load(), s.name[1].Load()))
	}
	return names, nil
}

// checkHeader validates the header (no seqlock: a read checks the epoch
// around it).
func (r *Reader) checkHeader() error {
	h := &r.seg.header
	if e := h.epoch.Load(); e == 0 || e&1 == 1 {
		return ErrNotInitialised
	}
	if h.magic.Load() != Magic {
		return ErrMalformed
	}
	if h.version.Load() != LayoutVersion {
		return ErrVersion
	}
	if h.headerSize.Load() != HeaderSize || h.segmentSize.Load() != SegmentSize ||
		h.sectionSize.Load() != SectionSize || h.sectionCount.Load() > MaxSections {
		return ErrMalformed
	}
	return nil
}

// find returns the clock's section, nil if there is none; the caller checks
// the epoch around it.
func (r *Reader) find(w0, w1 uint64) *section {
	n := int(r.seg.sectionCount.Load())
	for i := 0; i < n && i < MaxSections; i++ {
		s := &r.seg.sections[i]
		if s.name[0].Load() == w0 && s.name[1].Load() == w1 {
			return s
		}
	}
	return nil
}

// snapshot reads a clock's section consistently: the header's epoch and the
// section's sequence are even and unchanged across the read of every field.
func (r *Reader) snapshot(clock string, out *snapshot, steps bool) error {
	w0, w1, ok := nameWords(clock)
	if !ok {
		return ErrUnknownClock
	}
	epoch := &r.seg.epoch
	last := ErrInconsistent
	for a := 1; a <= maxAttempts; a++ {
		if a%64 == 0 {
			runtime.Gosched()
		}
		e1 := epoch.Load()
		if e1 == 0 || e1&1 == 1 {
			last = ErrNotInitialised
			continue
		}
		if err := r.checkHeader(); err != nil {
			if epoch.Load() != e1 {
				continue
			}
			return err
		}
		s := r.find(w0, w1)
		if s == nil {
			if epoch.Load() != e1 {
				continue
			}
			return ErrUnknownClock
		}
		q1 := s.seq.Load()
		if q1&1 == 1 {
			last = ErrInconsistent
			continue
		}
		s.load(out, steps)
		if s.seq.Load() != q1 || epoch.Load() != e1 {
			last = ErrInconsistent
			continue
		}
		if out.State == Unknown {
			return ErrNotInitialised
		}
		if !out.valid() {
			return ErrMalformed
		}
		return nil
	}
	return last
}

// Now returns the clock's true time now: the section's model evaluated at one
// read of CLOCK_MONOTONIC_RAW.
func (r *Reader) Now(clock string) (Interval, error) {
	var s snapshot
	if err := r.snapshot(clock, &s, false); err != nil {
		return Interval{}, err
	}
	raw, err := r.raw.Now()
	if err != nil {
		return Interval{}, err
	}
	return s.at(raw, 0)
}

// After reports whether tNS (on the clock's timeline) has definitely passed:
// the earliest the true time can be now is later than tNS (TrueTime's after).
func (r *Reader) After(clock string, tNS int64) (bool, error) {
	iv, err := r.Now(clock)
	return err == nil && iv.EarliestNS > tNS, err
}

// Before reports whether tNS has definitely not arrived: the latest the true
// time can be now is earlier than tNS (TrueTime's before).
func (r *Reader) Before(clock string, tNS int64) (bool, error) {
	iv, err := r.Now(clock)
	return err == nil && iv.LatestNS < tNS, err
}

// Past returns the true time of a stamp already taken on base (a kernel
// packet or GPIO stamp, say). A MONOTONIC_RAW stamp is the model's own base
// clock; a MONOTONIC or REALTIME stamp is carried to it through the relation
// between the two clocks read now, adding SlewPPB × the stamp's age to the
// half-width. A REALTIME stamp on the far side of a step the writer saw is
// carried through the step; one the reader cannot place (a step since the
// last publish, or a value REALTIME showed on both sides of a backward step)
// fails with ErrStepped. Past fails with ErrVoid once the section is void now,
// whatever the stamp's time.
func (r *Reader) Past(clock string, base Base, stampNS int64) (Interval, error) {
	var s snapshot
	if err := r.snapshot(clock, &s, true); err != nil {
		return Interval{}, err
	}
	if base == MonotonicRaw {
		now, err := r.raw.Now()
		if err != nil {
			return Interval{}, err
		}
		if now >= s.VoidNS {
			return Interval{}, ErrVoid
		}
		return s.at(stampNS, 0)
	}
	var other timebase.Clock
	switch base {
	case Realtime:
		other = r.realtime
	case Monotonic:
		other = r.monotonic
	default:
		return Interval{}, fmt.Errorf("stamp base %v: %w", base, errors.ErrUnsupported)
	}
	// Bracket one read of the stamp's clock between two of the base clock.
	r1, err := r.raw.Now()
	if err != nil {
		return Interval{}, err
	}
	x, err := other.Now()
	if err != nil {
		return Interval{}, err
	}
	r2, err := r.raw.Now()
	if err != nil {
		return Interval{}, err
	}
	if r2 >= s.VoidNS {
		return Interval{}, ErrVoid
	}
	if d := x - stampNS; d > maxAgeNS || d < -maxAgeNS {
		return Interval{}, ErrVoid // farther from now than any model reaches
	}
	mid, jitter := r1+(r2-r1)/2, (r2-r1+1)/2
	rel := x - mid // the stamp's clock minus the base clock, now
	raw := stampNS - rel
	if base == Realtime && s.RealtimeNS != 0 {
		// A step since the last publish: the writer has not placed it yet.
		if abs(rel-(s.RealtimeNS-s.BaseNS)) > growNS(mid-s.BaseNS, SlewPPB)+StepSlackNS+jitter {
			return Interval{}, ErrStepped
		}
		if s.stepTo != 0 {
			// The step came after base time stepFrom and by stepTo. Read in
			// today's scale the stamp is at raw; read in the scale before the
			// step, at raw + stepNS. Each reading is certain on its side of
			// the window, possible inside it; answer only when one is certain
			// and the other impossible.
			oldRaw := raw + s.stepNS
			switch {
			case raw >= s.stepTo && oldRaw >= s.stepTo:
			case oldRaw <= s.stepFrom && raw <= s.stepFrom:
				raw = oldRaw
			default:
				return Interval{}, ErrStepped
			}
		}
	}
	return s.at(raw, jitter+growNS(mid-raw, SlewPPB))
}
