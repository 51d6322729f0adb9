package spool

import (
	"context"
	"fmt"
	"io"
	"os"
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
			s.droppedCorrupt.Add(seg.count(pos, seg.end()))
			seg.corrupt = pos
			r.release()
			if s.active != nil && seg == s.segs[len(s.segs)-1] {
				// The damage is in the segment being written: later entries
				// go to a new one, not behind the damage.
				s.closeActive(true)
			}
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
