package judge

import (
	"fmt"
	"slices"
	"sync"
)

// Judged is one judged clock of a Set: its state machine behind a mutex, so
// that a reader (a scrape, /status) waits at most for a copy, and a source
// feeding it never waits for a reader's I/O.
type Judged struct {
	clock, source string
	tl            *Timeline

	mu      sync.Mutex
	c       *Clock
	changes uint64
}

// View is a judged clock as a reader sees it.
type View struct {
	Clock, Source string
	State         State
	SinceNS       int64 // when the state was entered; 0 while UNKNOWN
	OffsetNS      int64 // the latest sample's
	BoundNS       int64 // at the time asked (grown in HOLDOVER)
	LastSampleNS  int64 // the latest sample's time; 0 for none
	Changes       uint64
	Missed        uint64 // samples due that did not come (Missed)
	// Outlier: FREERUN only for its latest, fresh sample's offset
	// (Clock.Outlier); BoundNS is then that sample's own.
	Outlier bool
}

// Clock and Source name the judged clock ("system", "phc0", an NTP server)
// and the source judging it ("ntp", "chrony", "ptp4l", "hca").
func (j *Judged) Clock() string  { return j.clock }
func (j *Judged) Source() string { return j.source }

// Observe is Clock.Observe under the lock; a sample without MonoNS is
// placed on the Set's Timeline.
func (j *Judged) Observe(s Sample) Changes {
	if s.MonoNS == 0 {
		s.MonoNS = j.tl.At(s.TimeNS).MonoNS
	}
	return j.counted(func(c *Clock) Changes { return c.Observe(s) })
}

// Missed is Clock.Missed under the lock, the deadline (REALTIME) placed on
// the Set's Timeline.
func (j *Judged) Missed(deadline int64) Changes {
	at := j.tl.At(deadline)
	return j.counted(func(c *Clock) Changes { return c.Missed(at) })
}

// counted runs f on the clock under the lock and counts the changes it made.
func (j *Judged) counted(f func(c *Clock) Changes) Changes {
	j.mu.Lock()
	ch := f(j.c)
	j.changes += uint64(ch.n)
	j.mu.Unlock()
	return ch
}

// Advance is Clock.Advance under the lock, at now (REALTIME) placed on the
// Set's Timeline.
func (j *Judged) Advance(now int64) (Transition, bool) { return j.AdvanceTo(j.tl.At(now)) }

// AdvanceTo is Clock.Advance under the lock.
func (j *Judged) AdvanceTo(now Instant) (Transition, bool) {
	j.mu.Lock()
	tr, ok := j.c.Advance(now)
	if ok {
		j.changes++
	}
	j.mu.Unlock()
	return tr, ok
}

// Due is Clock.Due under the lock.
func (j *Judged) Due() (int64, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.c.Due()
}

// View is the clock at now (REALTIME, placed on the Set's Timeline; its
// bound grown to now in HOLDOVER). It does not judge: a state due by now
// comes with the owner's Advance.
func (j *Judged) View(now int64) View { return j.ViewAt(j.tl.At(now)) }

// ViewAt is View at an instant of both clocks.
func (j *Judged) ViewAt(now Instant) View {
	j.mu.Lock()
	defer j.mu.Unlock()
	st, since := j.c.State()
	v := View{Clock: j.clock, Source: j.source, State: st, SinceNS: since, BoundNS: j.c.Bound(now.MonoNS), Changes: j.changes, Missed: j.c.MissedCount()}
	if s, ok := j.c.Last(); ok {
		v.OffsetNS, v.LastSampleNS = j.c.Offset(), s.TimeNS
	}
	v.Outlier = j.c.Outlier(now.MonoNS)
	return v
}

// Set is every judged clock of an agent.
type Set struct {
	// Timeline places the REALTIME times its clocks are given on the
	// steady clock; nil: the system's (NewTimeline(nil)), made at the first
	// Add. Set it before.
	Timeline *Timeline

	mu   sync.Mutex
	list []*Judged
}

// Add judges one more clock; a clock and source named twice is refused
// (its metrics and status would be one).
func (s *Set) Add(clock, source string, cfg Config) (*Judged, error) {
	c, err := New(cfg)
	if err != nil {
		return nil, fmt.Errorf("judge %s (%s): %w", clock, source, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.list {
		if j.clock == clock && j.source == source {
			return nil, fmt.Errorf("judge: clock %s of source %s is judged twice", clock, source)
		}
	}
	j := &Judged{clock: clock, source: source, c: c, tl: s.time()}
	s.list = append(s.list, j)
	return j, nil
}

// Time is the Set's Timeline (the system's when none was set).
func (s *Set) Time() *Timeline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.time()
}

func (s *Set) time() *Timeline {
	if s.Timeline == nil {
		s.Timeline = NewTimeline(nil)
	}
	return s.Timeline
}

// Views appends every judged clock's view at now (REALTIME) to into,
// ordered by clock and source.
func (s *Set) Views(now int64, into []View) []View {
	s.mu.Lock()
	list := slices.Clone(s.list)
	s.mu.Unlock()
	n := len(into)
	for _, j := range list {
		into = append(into, j.ViewAt(j.tl.At(now)))
	}
	slices.SortFunc(into[n:], func(a, b View) int {
		if a.Clock != b.Clock {
			return cmpStr(a.Clock, b.Clock)
		}
		return cmpStr(a.Source, b.Source)
	})
	return into
}

func cmpStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
