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
}

// Clock and Source name the judged clock ("system", "phc0", an NTP server)
// and the source judging it ("ntp", "chrony", "ptp4l", "hca").
func (j *Judged) Clock() string  { return j.clock }
func (j *Judged) Source() string { return j.source }

// Observe is Clock.Observe under the lock.
func (j *Judged) Observe(s Sample) Changes {
	return j.counted(func(c *Clock) Changes { return c.Observe(s) })
}

// Missed is Clock.Missed under the lock.
func (j *Judged) Missed(deadline int64) Changes {
	return j.counted(func(c *Clock) Changes { return c.Missed(deadline) })
}

// counted runs f on the clock under the lock and counts the changes it made.
func (j *Judged) counted(f func(c *Clock) Changes) Changes {
	j.mu.Lock()
	ch := f(j.c)
	j.changes += uint64(ch.n)
	j.mu.Unlock()
	return ch
}

// Advance is Clock.Advance under the lock.
func (j *Judged) Advance(t int64) (Transition, bool) {
	j.mu.Lock()
	tr, ok := j.c.Advance(t)
	if ok {
		j.changes++
	}
	j.mu.Unlock()
	return tr, ok
}

// View is the clock at time now (its bound grown to now in HOLDOVER). It
// does not judge: a state due by now comes with the owner's Advance.
func (j *Judged) View(now int64) View {
	j.mu.Lock()
	defer j.mu.Unlock()
	st, since := j.c.State()
	v := View{Clock: j.clock, Source: j.source, State: st, SinceNS: since, BoundNS: j.c.Bound(now), Changes: j.changes}
	if s, ok := j.c.Last(); ok {
		v.OffsetNS, v.LastSampleNS = s.OffsetNS, s.TimeNS
	}
	return v
}

// Set is every judged clock of an agent.
type Set struct {
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
	j := &Judged{clock: clock, source: source, c: c}
	s.list = append(s.list, j)
	return j, nil
}

// Views appends every judged clock's view at now to into, ordered by clock
// and source.
func (s *Set) Views(now int64, into []View) []View {
	s.mu.Lock()
	list := slices.Clone(s.list)
	s.mu.Unlock()
	n := len(into)
	for _, j := range list {
		into = append(into, j.View(now))
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
