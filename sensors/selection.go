package sensors

import "time"

// Selection is a selection of sensors listed again now and then (sensors
// come and go with drivers and hot-plugged chips): Scan closes the files of
// the last listing and lists the sensors again, Due says whether the last
// listing is older than a period. The latest listing is its Matched. One
// goroutine only.
type Selection struct {
	Matched
	list   func() (Matched, error)
	now    func() time.Time
	last   time.Time
	failed uint64
}

// NewSelection returns a selection listed by list (fs.Match of patterns,
// or fs.List's sensors and failures) at the times of now; nothing is listed
// before the first Scan.
func NewSelection(list func() (Matched, error), now func() time.Time) *Selection {
	return &Selection{list: list, now: now}
}

// Scan lists the sensors again, keeping none of the old files open; it
// returns the listing's error (what did list is kept).
func (s *Selection) Scan() error {
	CloseAll(s.Sensors)
	s.last = s.now()
	var err error
	s.Matched, err = s.list()
	s.failed += uint64(s.Failed)
	return err
}

// Due says whether there was no Scan yet, the last is every or more ago,
// or a sensor of the last listing is gone (Sensor.Gone: its chip was
// removed), so that a chip that went away costs one failed read, not one
// every collection until the next periodic listing.
func (s *Selection) Due(every time.Duration) bool {
	return s.last.IsZero() || s.now().Sub(s.last) >= every || s.Gone()
}

// Gone says whether a sensor of the last listing is gone (Sensor.Gone).
func (s *Selection) Gone() bool {
	for _, x := range s.Sensors {
		if x.Gone() {
			return true
		}
	}
	return false
}

// ScanFailures is the sources that could not be listed, over every Scan.
func (s *Selection) ScanFailures() uint64 { return s.failed }

// Close closes the sensors of the latest listing.
func (s *Selection) Close() error { return CloseAll(s.Sensors) }
