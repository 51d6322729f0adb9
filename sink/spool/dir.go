package spool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

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
	if errors.Is(err, fs.ErrNotExist) {
		st.Vanished++
		return nil
	}
	if err != nil {
		return fmt.Errorf("spool %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("spool %s: %w", p, err)
	}
	st.Segments++
	sc.reset(f, fi.Size(), first)
	for {
		h, payload, err := sc.entry()
		if err == io.EOF {
			return nil
		}
		if damaged(err) {
			st.TailBytes += fi.Size() - sc.off
			return nil
		}
		if err != nil {
			return fmt.Errorf("spool %s: %w", p, err)
		}
		st.Entries++
		st.Points += uint64(h.Points)
		st.Bytes += int64(HeaderSize + len(payload))
		if h.LastSeq() > st.Acked {
			st.Pending += min(uint64(h.Points), h.LastSeq()-st.Acked)
		}
		if fn == nil {
			continue
		}
		lines, err := z.lines(h, payload)
		if err != nil {
			return fmt.Errorf("spool %s at %d: %w", p, sc.off-int64(HeaderSize+len(payload)), err)
		}
		if err := fn(Entry{Header: h, Lines: lines}); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
}
