package record

// SeriesRecent is how many of its latest record times a SeriesTime holds:
// a record's time is checked against these exactly, and against the rest
// only as far as "after all of them" goes.
const SeriesRecent = 16

// TimeCounts is what a source's SeriesTimes did: records moved off a time
// their series already had (bumps), and records whose time could not be
// checked (unchecked: not after every time the series no longer holds, so
// it may equal one of those).
type TimeCounts struct{ Bumps, Unchecked uint64 }

// SeriesTime keeps the record times of one series (one measurement and tag
// set) apart, so that InfluxDB keeps every record: a time that a record of
// the series still held has already moves to the first free nanosecond
// after it and is counted; any other time is kept as it is, whatever the
// order (a later stamp of a stepped clock, senders out of order). It holds
// the series' last SeriesRecent times and the latest of those it let go: a
// time after that one is checked exactly, an earlier one against the held
// times only (counted unchecked). Its zero value is ready; placing a time
// does not allocate.
type SeriesTime struct {
	recent  [SeriesRecent]int64 // the latest placed times, a ring in placing order
	n, pos  int                 // times held; the oldest one's index once full
	hi      int64               // the latest time placed
	gone    int64               // the latest time no longer held (once let go)
	letGone bool
}

// Place returns the time for a record stamped t and keeps it, counting a
// move or an unchecked time in c.
func (s *SeriesTime) Place(t int64, c *TimeCounts) int64 {
	at := t
	if s.n > 0 && at <= s.hi { // at or before a held time: look for it
		for s.holds(at) {
			at++
		}
	}
	if at != t {
		c.Bumps++
	}
	if s.letGone && at <= s.gone {
		c.Unchecked++
	}
	if s.n == 0 || at > s.hi {
		s.hi = at
	}
	if s.n < SeriesRecent {
		s.recent[s.n] = at
		s.n++
		return at
	}
	if old := s.recent[s.pos]; !s.letGone || old > s.gone {
		s.gone, s.letGone = old, true
	}
	s.recent[s.pos] = at
	s.pos = (s.pos + 1) % SeriesRecent
	return at
}

// holds says whether t is one of the held times.
func (s *SeriesTime) holds(t int64) bool {
	for _, r := range s.recent[:s.n] {
		if r == t {
			return true
		}
	}
	return false
}

// Next is Place for a source that counts only the moves (its stamps come in
// order, so a time before those let go is a clock stepped back).
func (s *SeriesTime) Next(t int64, bumps *uint64) int64 {
	var c TimeCounts
	t = s.Place(t, &c)
	*bumps += c.Bumps
	return t
}
