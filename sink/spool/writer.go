package spool

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// openSegment creates the segment the frame goes to, named after the frame's
// first point. It never opens an existing file: whatever is there is not a
// place for new entries.
func (s *Spool) openSegment() error {
	first := s.nextSeq - uint64(s.framePts)
	p := filepath.Join(s.opts.Dir, segName(first))
	if s.stale == p {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("spool %s: removing a failed segment: %w", p, err)
		}
		s.stale = ""
	}
	// Readable too: entries whose fsync failed are read back (takeBack).
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool %s: %w", p, err)
	}
	s.active = f
	s.segs = append(s.segs, &segment{first: first, last: first - 1, path: p, syncedLast: first - 1})
	s.dirDirty = true
	return nil
}

// closeActive ends the active segment, fsynced first if sync is set; the next
// write starts a new segment.
func (s *Spool) closeActive(sync bool) error {
	var err error
	if sync {
		err = s.syncActive()
		if s.active == nil { // the fsync failed and closed it
			return err
		}
	}
	f, g := s.active, s.segs[len(s.segs)-1]
	s.active, s.dirty = nil, false
	if cerr := f.Close(); cerr != nil {
		s.writeFailed()
		err = errors.Join(err, fmt.Errorf("spool %s: %w", g.path, cerr))
	}
	if g.points == 0 { // nothing of it is worth keeping
		s.segs = s.segs[:len(s.segs)-1]
		if rerr := os.Remove(g.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			s.stale = g.path
		}
		s.dirDirty = true
	}
	return err
}

// syncActive fsyncs the active segment if it holds data not yet fsynced.
//
// A failed fsync is not tried again on that file: Linux reports a writeback
// error once and may have dropped the pages, so a later fsync proves nothing.
// The entries written since the last good fsync are taken back into memory
// (takeBack) and the segment is closed: the next write puts them, and what
// follows, into a new segment.
func (s *Spool) syncActive() error {
	if !s.dirty || s.active == nil {
		return nil
	}
	g := s.segs[len(s.segs)-1]
	if err := s.syncFile(s.active); err != nil {
		s.writeFailed()
		err = fmt.Errorf("spool %s: fsync: %w", g.path, err)
		if terr := s.takeBack(g); terr != nil {
			err = errors.Join(err, terr)
		}
		return errors.Join(err, s.closeActive(false))
	}
	s.fsyncs.Add(1)
	s.dirty = false
	g.synced, g.syncedLast = g.size, g.last
	return nil
}

// takeBack moves the entries of the active segment g written since its last
// good fsync back to the front of the frame, and cuts g back to what was
// fsynced. MaxBuffer bounds them with the frame and the producer's buffer
// (unsafe). It does so only if they all read back intact and the cut
// succeeds; otherwise they stay in g, not known to be durable: the reader
// still hands them out, or counts them in DroppedCorrupt if their bytes are
// gone (see doc.go).
func (s *Spool) takeBack(g *segment) error {
	region := g.size - g.synced
	if region <= 0 || g.corrupt > 0 {
		return nil
	}
	var sc scanner
	sc.reset(s.active, g.size, g.first)
	sc.seek(g.synced, g.syncedLast+1)
	redo := make([]byte, 0, region+int64(len(s.frame)))
	var points uint64
	for {
		h, payload, err := sc.entry()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil // not intact: left to the reader's checks
		}
		redo = AppendEntry(redo, h, payload)
		points += uint64(h.Points)
	}
	if g.syncedLast+points != g.last {
		return nil
	}
	if err := s.active.Truncate(g.synced); err != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("spool %s: cutting entries not fsynced at %d: %w", g.path, g.synced, err)
	}
	g.size, g.last, g.points = g.synced, g.syncedLast, g.points-points
	s.frame = append(redo, s.frame...)
	s.framePts += int(points)
	return nil
}

// flusher flushes FlushInterval after the buffer receives its first point
// (at once when it fills or its producer goes idle, Idle), and wakes otherwise only when something written
// is due: an fsync or the ack file's write FsyncInterval after the last,
// entries a failed write left, retried every FlushInterval. An idle spool
// sleeps (on a board, every wake-up costs the whole runtime's).
func (s *Spool) flusher() {
	defer close(s.done)
	defer s.timer.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.timer.C:
			s.tmu.Lock()
			s.armed = false
			s.tmu.Unlock()
		case <-s.kick:
			// The flush takes the buffer the timer was armed for: the
			// flush arms it again for what it leaves due, not a wake-up
			// with nothing to write.
			s.tmu.Lock()
			s.timer.Stop()
			s.armed = false
			s.tmu.Unlock()
		}
		s.flushes.Add(1)
		if err := s.Flush(); err != nil {
			msg := err.Error()
			s.flushErr.Store(&msg)
		} else {
			s.flushErr.Store(nil)
		}
	}
}

// due is how long until the flusher has work that no append brings: points
// still buffered (appended while it flushed), entries a failed write left,
// an fsync of written data or the ack file's write.
func (s *Spool) due() (time.Duration, bool) {
	s.mu.Lock()
	buffered := s.bufPoints > 0
	s.mu.Unlock()
	s.io.Lock()
	defer s.io.Unlock()
	if s.ioClosed {
		return 0, false
	}
	var d time.Duration
	ok := false
	at := func(x time.Duration) {
		x = max(x, time.Millisecond)
		if !ok || x < d {
			d, ok = x, true
		}
	}
	if (buffered && !s.opts.IdleFlush) || len(s.frame) > 0 { // with IdleFlush, Idle or the next Append brings them
		at(s.opts.FlushInterval)
	}
	if s.dirty || s.dirDirty {
		at(s.opts.FsyncInterval - s.syncAge())
	}
	if s.ackDirty {
		at(s.opts.FsyncInterval - time.Since(s.ackSync))
	}
	return d, ok
}

// Flush seals the buffer into entries, writes them and fsyncs if the fsync
// interval has passed. Entries that cannot be written stay in memory for the
// next flush (and count against MaxBuffer); a segment that cannot be opened is
// tried again then.
func (s *Spool) Flush() error {
	err := s.flush(false)
	s.armDue()
	return err
}

// Sync is Flush with an fsync regardless of the interval.
func (s *Spool) Sync() error {
	err := s.flush(true)
	s.armDue()
	return err
}

// armDue arms the flusher's timer for what the flush left due.
func (s *Spool) armDue() {
	if d, ok := s.due(); ok {
		s.arm(d)
	}
}

func (s *Spool) flush(forceSync bool) error {
	s.disk.Lock()
	defer s.disk.Unlock()
	s.io.Lock()
	defer s.io.Unlock()
	if s.ioClosed {
		return ErrClosed
	}
	var err error
	if s.active != nil && s.segs[len(s.segs)-1].corrupt > 0 {
		// The reader found damage in the segment being written: later
		// entries go to a new one, not behind the damage.
		err = s.closeActive(true)
	}
	// What waited for its fsync since before this flush and is due goes
	// with it (syncAge moves to this flush's write).
	aged := (s.dirty || s.dirDirty) && s.syncAge() >= s.opts.FsyncInterval-s.syncSlack()
	// Swap the producer's buffer for the spare half. The half taken still
	// counts against MaxBuffer until it is fsynced: while it is written and
	// fsynced (which a slow card makes last), Append fills the other half
	// only up to what is left.
	s.mu.Lock()
	data, points := s.buf, s.bufPoints
	s.buf, s.bufPoints = s.spare[:0], 0
	s.unwritten.Add(int64(len(data)))
	s.flight = points
	s.mu.Unlock()
	s.spare = data
	var werr error
	switch {
	case len(s.frame) > 0: // entries a failed write left go first
		if points > 0 {
			s.seal(data, points)
		}
		werr = s.writeFrame()
	case points > 0:
		werr = s.writeData(data, points)
	}
	if werr != nil && s.removeResolved() && len(s.frame) > 0 {
		// The segment the failure ended held only resolved points (a disk
		// no larger than a segment, full of what was shipped): its room
		// is back, so once more, in a new segment.
		werr = s.writeFrame()
	}
	err = errors.Join(err, werr)
	if len(s.frame) > 0 && cap(s.spare) > 2*s.opts.FlushBytes {
		s.spare = nil // the frame holds a copy while writing fails: let the large half go
	}
	// Data is now written (not yet fsynced) or sealed in the frame.
	s.unwritten.Store(s.unsafe())
	if (s.dirty || s.dirDirty) && (forceSync || aged || time.Since(s.lastSync) >= s.opts.FsyncInterval-s.syncSlack() || s.unsynced() >= int64(s.opts.MaxBuffer/2)) {
		err = errors.Join(err, s.syncLocked())
	}
	if s.ackDirty && (forceSync || time.Since(s.ackSync) >= s.opts.FsyncInterval-s.syncSlack()) {
		err = errors.Join(err, s.persistAck())
	}
	s.unwritten.Store(s.unsafe())
	return err
}

// syncAge is how long what is not fsynced has waited: since its first
// write when only the active segment's data waits, so that data's fsync
// falls on the phase of the flushes that write it (a flush a second later
// takes it) rather than on the phase of the last fsync, which an fsync of
// its own keeps apart from the flushes for good (issue 37: an agent that
// started between its sources' seconds woke a third time a second for it).
// Data written at t is fsynced by t + FsyncInterval either way. Since the
// last fsync when the directory changed too.
func (s *Spool) syncAge() time.Duration {
	if s.dirty && !s.dirDirty {
		return time.Since(s.dirtyAt)
	}
	return time.Since(s.lastSync)
}

// syncSlack is how much before FsyncInterval a flush may fsync: data that
// comes once a second is flushed a second apart give or take the
// scheduler's jitter, and its fsync goes with that flush rather than with
// a wake-up of its own a moment later. The smaller of FlushInterval and a
// tenth of FsyncInterval.
func (s *Spool) syncSlack() time.Duration {
	return min(s.opts.FlushInterval, s.opts.FsyncInterval/10)
}

// unsynced is how much of the active segment is not yet fsynced: the bytes a
// failed fsync brings back into memory (takeBack). A flush fsyncs once it
// reaches half of MaxBuffer, whatever the fsync interval.
func (s *Spool) unsynced() int64 {
	if s.active == nil {
		return 0
	}
	g := s.segs[len(s.segs)-1]
	return g.size - g.synced
}

// unsafe is what MaxBuffer bounds besides the producer's buffer: sealed
// entries not yet written, and entries written but not yet fsynced.
func (s *Spool) unsafe() int64 { return int64(len(s.frame)) + s.unsynced() }

// cut returns how much of data (points points, one a line) goes into one
// entry: whole lines, at most about FlushBytes (a longer line alone), so that
// a reader needs no more; and how many points that is.
func (s *Spool) cut(data []byte, points int) (int, int) {
	limit := s.opts.FlushBytes
	if len(data) <= limit {
		return len(data), points
	}
	n := bytes.LastIndexByte(data[:limit], '\n') + 1
	if n == 0 {
		i := bytes.IndexByte(data[limit:], '\n')
		if i < 0 {
			return len(data), points
		}
		n = limit + i + 1
	}
	if c := bytes.Count(data[:n], newline); n < len(data) && c < points {
		return n, c
	}
	return len(data), points
}

var newline = []byte{'\n'}

// payload is data as an entry carries it, and the entry's flags: with
// Compress, gzipped into s.gzbuf (valid until the next call).
func (s *Spool) payload(data []byte) ([]byte, uint8) {
	if !s.opts.Compress {
		return data, 0
	}
	s.gzbuf.Reset()
	s.gz.Reset(&s.gzbuf)
	s.gz.Write(data)
	s.gz.Close()
	return s.gzbuf.Bytes(), FlagGzip
}

// seal frames data (points points of the flush under way) as entries at the
// end of s.frame: a copy, for entries that wait for a write that failed.
func (s *Spool) seal(data []byte, points int) {
	for len(data) > 0 {
		n, pts := s.cut(data, points)
		payload, flags := s.payload(data[:n])
		s.frame = AppendEntry(s.frame, Header{FirstSeq: s.nextSeq, Points: uint32(pts), Flags: flags}, payload)
		s.framePts += pts
		s.flight -= pts
		s.nextSeq += uint64(pts)
		data, points = data[n:], points-pts
	}
}

// writeFailed notes a failed attempt to write.
func (s *Spool) writeFailed() {
	s.writeErrors.Add(1)
	s.diskFailing.Store(true)
}

// writeData writes data (points points) as entries straight from the buffer,
// without a copy. What cannot be written waits in the frame for the next
// flush; so does what follows entries a failed fsync took back into it.
func (s *Spool) writeData(data []byte, points int) error {
	for len(data) > 0 {
		n, pts := s.cut(data, points)
		before := s.nextSeq
		err := s.writeEntry(data[:n], pts)
		if s.nextSeq != before { // written (a roll after it may have failed)
			data, points = data[n:], points-pts
		}
		if err != nil || len(s.frame) > 0 {
			s.seal(data, points)
			if err == nil {
				err = s.writeFrame()
			}
			return err
		}
	}
	return nil
}

// writeEntry writes one entry of data (points points of the flush under way)
// to the active segment, opening one first if there is none.
func (s *Spool) writeEntry(data []byte, points int) error {
	if s.active == nil {
		if err := s.openSegment(); err != nil {
			s.writeFailed()
			return err
		}
	}
	payload, flags := s.payload(data)
	putHeader(&s.hdr, Header{FirstSeq: s.nextSeq, Points: uint32(points), Flags: flags}, payload)
	if written, err := s.write(s.hdr[:], payload); err != nil {
		g := s.segs[len(s.segs)-1]
		if written > 0 {
			err = errors.Join(err, s.cutPartial(g, g.size))
		}
		return errors.Join(err, s.closeActive(true))
	}
	s.nextSeq += uint64(points)
	s.flight -= points
	return s.wrote(points, HeaderSize+len(payload))
}

// writeFrame writes the sealed entries to the active segment, opening one
// first if there is none, a segment's worth at a time (at least one entry),
// rolling as it goes. When a write fails part way, the whole entries it
// wrote are kept and the rest waits in the frame: a frame larger than the
// free space (a backlog gathered while the disk was full) goes to disk as
// far as it fits, and the rest as space comes back, never retried whole.
func (s *Spool) writeFrame() error {
	moved := false // entries left the front of the frame
	defer func() {
		if moved && len(s.frame) > 0 {
			// What waits is copied out, so that the written part of a
			// large array does not stay on the heap beside the new
			// points MaxBuffer now lets in (MemoryBytes).
			s.frame = append([]byte(nil), s.frame...)
		}
	}()
	for len(s.frame) > 0 {
		if s.active == nil {
			if err := s.openSegment(); err != nil {
				s.writeFailed()
				return err
			}
		}
		g := s.segs[len(s.segs)-1]
		n, points := entriesWithin(s.frame, max(s.opts.SegmentBytes-g.size, 1))
		written, err := s.write(s.frame[:n])
		if err != nil {
			n, points = entriesWithin(s.frame[:written], 0)
			if written > n {
				err = errors.Join(err, s.cutPartial(g, g.size+int64(n)))
			}
		}
		if n > 0 {
			s.frame, s.framePts = s.frame[n:], s.framePts-points
			if len(s.frame) == 0 {
				s.frame = nil // the frame's array may be large: let it go
			}
			moved = true
			// wrote may end the segment (full): its error is a failed fsync
			// or close, which ends it anyway.
			werr := s.wrote(points, n)
			if err != nil {
				s.diskFailing.Store(true) // wrote cleared it: the write failed all the same
			}
			err = errors.Join(err, werr)
		}
		if err != nil {
			if s.active != nil {
				err = errors.Join(err, s.closeActive(true))
			}
			return err
		}
	}
	return nil
}

// entriesWithin is the length and points of the whole entries at the start
// of b (sealed by this spool) that end within limit bytes; with limit 0 or
// less, within b. The first entry counts even if it alone is larger than a
// positive limit.
func entriesWithin(b []byte, limit int64) (n, points int) {
	for n+HeaderSize <= len(b) {
		size := HeaderSize + int(binary.LittleEndian.Uint32(b[n:]))
		if n+size > len(b) || (limit > 0 && n > 0 && int64(n+size) > limit) {
			break
		}
		points += int(binary.LittleEndian.Uint32(b[n+16:]))
		n += size
	}
	return n, points
}

// write appends bufs (whole entries) to the active segment and returns how
// many bytes of them reached it. On failure the caller keeps the whole
// entries among them, cuts what follows (cutPartial) and ends the segment: whatever
// broke the file (a cut that failed, a bad descriptor, a bad block), the next
// attempt starts a new one.
func (s *Spool) write(bufs ...[]byte) (int, error) {
	var written int
	for _, b := range bufs {
		n, err := s.active.Write(b)
		written += n
		if err != nil {
			s.writeFailed()
			return written, fmt.Errorf("spool %s: %w", s.segs[len(s.segs)-1].path, err)
		}
	}
	return written, nil
}

// cutPartial cuts the active segment g at off, the end of its last whole entry,
// after a write that failed part way. If the cut fails, garbage follows the
// last entry: the reader and the next open stop there, and nothing more goes
// after it (the caller ends the segment).
func (s *Spool) cutPartial(g *segment, off int64) error {
	if err := s.active.Truncate(off); err != nil {
		return fmt.Errorf("spool %s: cutting a partial write at %d: %w", g.path, off, err)
	}
	return nil
}

// wrote accounts n bytes of whole entries holding the next points of the
// active segment, just written, wakes the reader, and rolls the segment once
// it is full.
func (s *Spool) wrote(points, n int) error {
	g := s.segs[len(s.segs)-1]
	g.last += uint64(points) // a segment's entries run on without a gap
	g.points += uint64(points)
	g.size += int64(n)
	if !s.dirty {
		s.dirtyAt = time.Now()
	}
	s.dirty = true
	s.diskFailing.Store(false)
	close(s.notify)
	s.notify = make(chan struct{})
	var err error
	if g.size >= s.opts.SegmentBytes {
		err = s.closeActive(true)
	}
	s.enforceCap()
	return err
}

// syncFile fsyncs f (a segment, the ack file or the directory): every fsync
// of the spool goes through it, and through s.fsync when a test sets it. The
// caller holds s.disk and s.io; io is let go while the fsync runs (a slow
// card takes hundreds of ms), so that the reader, acknowledgements and Stats
// go on meanwhile. They write, roll and close nothing: what the caller
// relies on stays as it was, but for what they change (acked, ackDirty,
// dirDirty, delivered, segments before the active one, a segment's damage).
func (s *Spool) syncFile(f *os.File) error {
	s.io.Unlock()
	defer s.io.Lock()
	if s.fsync != nil {
		return s.fsync(f)
	}
	return f.Sync()
}

// syncLocked fsyncs the active segment and the directory.
func (s *Spool) syncLocked() error {
	s.lastSync = time.Now()
	err := s.syncActive()
	if s.dirDirty {
		s.dirDirty = false // an acknowledgement removing a segment during the fsync sets it again
		d, derr := os.Open(s.opts.Dir)
		if derr == nil {
			derr = s.syncFile(d)
			d.Close()
		}
		if derr != nil {
			s.dirDirty = true
			s.writeErrors.Add(1)
			return errors.Join(err, fmt.Errorf("spool %s: fsync: %w", s.opts.Dir, derr))
		}
	}
	return err
}
