package spool

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// chunkSize is how much of a segment a scanner reads at a time. An entry
// larger than that is read whole into a buffer of its size, so a scanner holds
// at most max(chunkSize, its largest entry) bytes whatever the segment's size.
const chunkSize = 64 << 10

// scanner reads the entries of one segment file in order. It is the one
// reader of the segment format: Open's recovery, the shipper's Reader and
// ReadDir all go through it.
//
// Within a segment the entries' sequence numbers run on without a gap from a
// first entry at or after the number in the file's name; an entry that breaks
// the run is corrupt.
type scanner struct {
	f      io.ReaderAt
	size   int64  // bytes of the file to read: the end as far as the caller knows
	off    int64  // file offset of the next entry
	first  uint64 // the segment's first sequence number (its name)
	next   uint64 // sequence number the next entry must start with (0: not yet known)
	buf    []byte // file bytes from bufOff
	bufOff int64
	chunk  int // bytes read at a time (0: chunkSize)
}

// reset starts reading a segment of size bytes from its beginning.
func (sc *scanner) reset(f io.ReaderAt, size int64, first uint64) {
	sc.f, sc.size, sc.off, sc.first, sc.next = f, size, 0, first, 0
	sc.buf, sc.bufOff = sc.buf[:0], 0
}

// seek moves to the entry at off, whose first point is next.
func (sc *scanner) seek(off int64, next uint64) { sc.off, sc.next = off, next }

// entry decodes the entry at sc.off and moves past it. The payload is valid
// until the next call. At the end of the bytes it returns io.EOF; for bytes
// that end inside an entry ErrShort, for a bad entry ErrCorrupt or
// ErrChecksum (see damaged), and sc.off stays at the entry.
func (sc *scanner) entry() (Header, []byte, error) {
	if sc.off >= sc.size {
		return Header{}, nil, io.EOF
	}
	b, err := sc.window(HeaderSize)
	if err != nil {
		return Header{}, nil, err
	}
	h, err := decodeHeader(b)
	if err != nil {
		return h, nil, err
	}
	switch {
	case sc.next == 0 && h.FirstSeq < sc.first:
		return h, nil, fmt.Errorf("%w: seq %d before the segment's first %d", ErrCorrupt, h.FirstSeq, sc.first)
	case sc.next != 0 && h.FirstSeq != sc.next:
		return h, nil, fmt.Errorf("%w: seq %d after %d", ErrCorrupt, h.FirstSeq, sc.next-1)
	}
	if b, err = sc.window(HeaderSize + int(h.Length)); err != nil {
		return h, nil, err
	}
	h, payload, n, err := DecodeEntry(b)
	if err != nil {
		return h, nil, err
	}
	sc.off += int64(n)
	sc.next = h.LastSeq() + 1
	return h, payload, nil
}

// window returns the n bytes at sc.off, reading them if the buffer does not
// hold them: ErrShort when the file ends first.
func (sc *scanner) window(n int) ([]byte, error) {
	if sc.off+int64(n) > sc.size {
		return nil, ErrShort
	}
	if start := sc.off - sc.bufOff; start >= 0 && start+int64(n) <= int64(len(sc.buf)) {
		return sc.buf[start : start+int64(n)], nil
	}
	chunk := sc.chunk
	if chunk <= 0 {
		chunk = chunkSize
	}
	want := min(int64(max(n, chunk)), sc.size-sc.off)
	if int64(cap(sc.buf)) < want {
		sc.buf = make([]byte, want)
	}
	sc.buf = sc.buf[:want]
	m, err := sc.f.ReadAt(sc.buf, sc.off)
	sc.buf, sc.bufOff = sc.buf[:m], sc.off
	if m < n {
		if err == nil || errors.Is(err, io.EOF) {
			return nil, ErrShort // the file is shorter than it was: cut meanwhile
		}
		return nil, fmt.Errorf("at %d: %w", sc.off, err)
	}
	return sc.buf[:n], nil
}

// inflater decompresses entry payloads into a buffer it reuses.
type inflater struct {
	gz  *gzip.Reader
	out bytes.Buffer
}

// lines returns the entry's line protocol: the payload itself, or the payload
// decompressed (valid until the next call).
func (z *inflater) lines(h Header, payload []byte) ([]byte, error) {
	if h.Flags&FlagGzip == 0 {
		return payload, nil
	}
	var err error
	if z.gz == nil {
		z.gz, err = gzip.NewReader(bytes.NewReader(payload))
	} else {
		err = z.gz.Reset(bytes.NewReader(payload))
	}
	if err != nil {
		return nil, err
	}
	z.out.Reset()
	if _, err := io.Copy(&z.out, z.gz); err != nil {
		return nil, err
	}
	return z.out.Bytes(), nil
}

// segName is a segment's file name: the sequence number of its first point.
func segName(first uint64) string { return fmt.Sprintf("%020d.seg", first) }

// parseSegName returns the first sequence number a segment file name holds;
// false for files that are not segments.
func parseSegName(name string) (uint64, bool) {
	if !strings.HasSuffix(name, ".seg") {
		return 0, false
	}
	first, err := strconv.ParseUint(strings.TrimSuffix(name, ".seg"), 10, 64)
	return first, err == nil && first != 0
}

// walkSegment reads the segment file f (path names it in errors) from its
// start through sc, calling fn with each whole entry (the payload valid
// during the call only). It stops at the end of the file or at the first
// bytes that are not a whole, sound entry (damaged: a torn tail, an entry
// being written, corruption), and returns the file's size as it was when it
// started: the bytes from sc.off on are that tail. An error from fn ends it
// and is returned as it is. Open's recovery and ReadDir walk segments
// through it; the shipper's Reader, which waits at the end for more, keeps
// its own scanner.
func walkSegment(f *os.File, path string, first uint64, sc *scanner, fn func(h Header, payload []byte) error) (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("spool %s: %w", path, err)
	}
	sc.reset(f, fi.Size(), first)
	for {
		h, payload, err := sc.entry()
		if err == io.EOF || damaged(err) {
			return fi.Size(), nil
		}
		if err != nil {
			return fi.Size(), fmt.Errorf("spool %s: %w", path, err)
		}
		if err := fn(h, payload); err != nil {
			return fi.Size(), err
		}
	}
}
