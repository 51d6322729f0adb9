package spool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Entry is one entry as a reader returns it.
type Entry struct {
	Header
	Lines []byte // line protocol, decompressed; valid until the next Next
}

// Reader hands out entries in order, starting after the acknowledged position.
// A spool has one reader: its shipper.
type Reader struct {
	s   *Spool
	f   *os.File
	seg *segment // the segment f reads
	sc  scanner
	z   inflater
}

// NewReader returns the spool's reader. A spool has one reader at a time: a new
// one (a shipper re-opening after an error) starts again after the acknowledged
// position, so points handed out but never acknowledged are read again.
func (s *Spool) NewReader() *Reader {
	s.io.Lock()
	s.forgetInFlight()
	s.delivered = s.acked
	s.io.Unlock()
	return &Reader{s: s}
}

// Next returns the next entry, waiting for one until ctx is done. Entries
// already resolved (acknowledged, or dropped by the cap) are skipped.
func (r *Reader) Next(ctx context.Context) (Entry, error) {
	for {
		e, wait, err := r.try()
		if err != nil || wait == nil {
			return e, err
		}
		select {
		case <-ctx.Done():
			return Entry{}, ctx.Err()
		case <-wait:
		}
	}
}

// TryNext returns the next entry if one is on disk, without waiting.
func (r *Reader) TryNext() (Entry, bool, error) {
	e, wait, err := r.try()
	if err != nil {
		return e, false, err
	}
	return e, wait == nil, nil
}

// try reads the next entry, or returns a channel that is closed when there may
// be one.
func (r *Reader) try() (Entry, <-chan struct{}, error) {
	s := r.s
	s.io.Lock()
	defer s.io.Unlock()
	if s.notify == nil {
		return Entry{}, nil, ErrClosed
	}
	for {
		pos := max(s.acked, s.delivered) + 1
		var seg *segment
		for _, g := range s.segs {
			if g.count(pos, g.end()) > 0 {
				seg = g
				break
			}
		}
		if seg == nil {
			r.release()
			return Entry{}, s.notify, nil
		}
		if r.seg != seg {
			r.release()
			f, err := os.Open(seg.path)
			if err != nil {
				return Entry{}, nil, fmt.Errorf("spool reader: %w", err)
			}
			r.f, r.seg = f, seg
			r.sc.reset(f, seg.size, seg.first)
		}
		r.sc.size = seg.size // the active segment grows
		h, payload, err := r.sc.entry()
		if err == io.EOF || damaged(err) {
			// Damaged after it was written (open checked it): skip the rest of
			// the segment, counted, rather than stop shipping for good.
			// If the damage is in the segment being written, the next
			// flush ends that segment before it writes (the flush under
			// way, if one is in an fsync, writes nothing more): later
			// entries go to a new one, not behind the damage.
			s.droppedCorrupt.Add(seg.count(pos, seg.end()))
			seg.corrupt = pos
			r.release()
			continue
		}
		if err != nil {
			return Entry{}, nil, fmt.Errorf("spool %s: %w", seg.path, err)
		}
		if h.LastSeq() < pos {
			continue
		}
		lines, err := r.z.lines(h, payload)
		if err != nil {
			return Entry{}, nil, fmt.Errorf("spool %s at %d: %w", seg.path, r.sc.off-int64(HeaderSize+len(payload)), err)
		}
		s.delivered = h.LastSeq()
		return Entry{Header: h, Lines: lines}, nil, nil
	}
}

// release closes the segment file the reader holds.
func (r *Reader) release() {
	if r.f != nil {
		r.f.Close()
	}
	r.f, r.seg = nil, nil
}

// Close releases the reader's file.
func (r *Reader) Close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f, r.seg = nil, nil
	return err
}

// DirStats is what ReadDir found in a spool directory.
type DirStats struct {
	Acked    uint64 // the acknowledged position (the ack file; 0 without one)
	Segments int    // segment files read
	// Vanished counts segment files listed but gone before they could be
	// opened: acknowledged and deleted meanwhile. They are skipped.
	Vanished int
	Entries  uint64 // whole entries read
	Points   uint64 // points in them
	Pending  uint64 // of those, points after the acknowledged position
	Bytes    int64  // bytes of whole entries
	// TailBytes counts bytes after a segment's last whole entry: an entry
	// being written at that moment, or a torn or damaged tail (which the
	// spool's Open cuts). They are not read.
	TailBytes int64
}

// IsDir says whether dir can be a spool, with an error naming why not: it
// is missing, or holds entries and none of a spool's (lock, ack, *.seg),
// such as a configuration pointing at the wrong directory. An empty
// directory is a spool not yet written.
func IsDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no spool at %s: %w", dir, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("spool %s: %w", dir, err)
	}
	for _, e := range entries {
		if n := e.Name(); n == "lock" || n == "ack" || strings.HasSuffix(n, ".seg") {
			return nil
		}
	}
	if len(entries) > 0 {
		return fmt.Errorf("%s is not a spool: %d entries and none of a spool's (lock, ack, *.seg)", dir, len(entries))
	}
	return nil
}

// ReadDir reads every entry of the spool in dir, oldest first, and calls fn
// with each (Lines decompressed, valid during the call only); with fn nil it
// only counts. It takes no lock and writes nothing, so it reads the spool of
// a running agent: a segment acknowledged and deleted before it is opened is
// skipped and counted (Vanished), one deleted while it is read is read to its
// end, and each segment is read up to its size when opened, stopping at a tail
// that is not a whole entry (TailBytes). Entries already acknowledged but
// still on disk are read too (Header.FirstSeq against DirStats.Acked tells).
// An error from fn ends the reading and is returned with the segment's name.
func ReadDir(dir string, fn func(Entry) error) (DirStats, error) {
	var st DirStats
	ents, err := os.ReadDir(dir)
	if err != nil {
		return st, fmt.Errorf("spool %s: %w", dir, err)
	}
	if st.Acked, err = readAck(filepath.Join(dir, "ack")); err != nil {
		return st, err
	}
	var sc scanner
	var z inflater
	for _, e := range ents { // sorted by name: zero-padded sequence numbers
		first, ok := parseSegName(e.Name())
		if !ok {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := readSegment(p, first, &sc, &z, &st, fn); err != nil {
			return st, err
		}
	}
	return st, nil
}

func readSegment(p string, first uint64, sc *scanner, z *inflater, st *DirStats, fn func(Entry) error) error {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		st.Vanished++
		return nil
	}
	if err != nil {
		return fmt.Errorf("spool %s: %w", p, err)
	}
	defer f.Close()
	st.Segments++
	size, err := walkSegment(f, p, first, sc, func(h Header, payload []byte) error {
		st.Entries++
		st.Points += uint64(h.Points)
		st.Bytes += int64(HeaderSize + len(payload))
		if h.LastSeq() > st.Acked {
			st.Pending += min(uint64(h.Points), h.LastSeq()-st.Acked)
		}
		if fn == nil {
			return nil
		}
		lines, err := z.lines(h, payload)
		if err != nil {
			return fmt.Errorf("spool %s at %d: %w", p, sc.off-int64(HeaderSize+len(payload)), err)
		}
		if err := fn(Entry{Header: h, Lines: lines}); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	st.TailBytes += size - sc.off
	return nil
}
