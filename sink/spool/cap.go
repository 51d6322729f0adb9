package spool

import "os"

// The cap: whole oldest segments dropped beyond MaxBytes, and counted.

// enforceCap drops whole oldest segments while the spool is over MaxBytes,
// counting the points in them that were neither acknowledged nor handed to the
// shipper. A segment holding points in flight (handed out, not acknowledged)
// is remembered in s.gone: the shipper still holds them and normally
// acknowledges them, but if it re-opens its reader or the spool closes first
// they are gone, and are counted then (forgetInFlight).
func (s *Spool) enforceCap() {
	var total int64
	for _, seg := range s.segs {
		total += seg.size
	}
	for total > s.opts.MaxBytes && len(s.segs) > 1 {
		g := s.segs[0]
		s.droppedCap.Add(g.count(max(s.acked, s.delivered)+1, g.end()))
		if g.inFlightEnd = min(s.delivered, g.end()); g.count(s.acked+1, g.inFlightEnd) > 0 {
			s.gone = append(s.gone, g)
		}
		os.Remove(g.path)
		s.dirDirty = true
		total -= g.size
		s.segs = s.segs[1:]
	}
}
