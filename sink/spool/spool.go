package spool

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
)

// Options configure a spool. Zero values take the defaults.
type Options struct {
	Dir           string
	SegmentBytes  int64         // roll to a new segment beyond this size (default 4 MiB)
	MaxBytes      int64         // cap on all segments; whole oldest segments go beyond it (default 256 MiB)
	FlushInterval time.Duration // seal and write the buffer this often (default 100 ms)
	FsyncInterval time.Duration // fsync at most this often (default 1 s)
	FlushBytes    int           // seal early when the buffer reaches this (default 1 MiB)
	MaxBuffer     int           // appends beyond this much unwritten data (buffered and sealed) are dropped and counted (default 32 MiB)
	Compress      bool          // gzip each entry (BestSpeed)
	// DeferFlush leaves the background flush to Start (an agent starts it
	// when it runs, so that opening starts nothing); Open starts it otherwise.
	DeferFlush bool
}

func (o *Options) defaults() {
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 4 << 20
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 256 << 20
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = 100 * time.Millisecond
	}
	if o.FsyncInterval <= 0 {
		o.FsyncInterval = time.Second
	}
	if o.FlushBytes <= 0 {
		o.FlushBytes = 1 << 20
	}
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = 32 << 20
	}
}

// gzipBytes is what the gzip writer and reader hold (measured: 1.15 MiB and
// 48 KiB, on amd64 and 32-bit ARM alike).
const gzipBytes = 1<<20 + 256<<10

// MemoryBytes is the most heap the spool holds with these options (zero values
// take the defaults), for a configuration check to weigh against the machine:
//
//   - 2 × MaxBuffer: the double buffer's halves, the one filling and the one
//     being written (each up to MaxBuffer). While writing fails, the entries
//     waiting for it, the points buffered behind them and the bytes written
//     but not yet fsynced (which a failed fsync takes back) are bounded
//     together by MaxBuffer, and taking back copies them once more;
//   - 4 × FlushBytes: the spare half and the frame of waiting entries, each
//     kept up to 2 × FlushBytes once writing fails or works again;
//   - 2 × (HeaderSize + FlushBytes) + 64 KiB: the reader's buffer for one entry
//     (the spool puts at most about FlushBytes into one) and its lines;
//   - with Compress, FlushBytes for one compressed entry and the gzip state.
//
// One Append batch may go beyond MaxBuffer, a line longer than FlushBytes makes
// its entry larger, and a spool written with a larger FlushBytes needs its
// largest entry to read.
func (o Options) MemoryBytes() int64 {
	o.defaults()
	m, f := int64(o.MaxBuffer), int64(o.FlushBytes)
	n := 2*m + 4*f + 2*(HeaderSize+f) + chunkSize
	if o.Compress {
		n += f + gzipBytes
	}
	return n
}

// Stats are the spool's counters, shipped with the data.
//
// Every point handed to Append or AppendLines that the encoder takes is
// counted in Appended and, from then on, in exactly one of the others:
//
//	Appended + Recovered = Acknowledged + DeadLettered + Pending + Buffered +
//	                       DroppedCap + DroppedBuffer + DroppedCorrupt + DroppedDisk
//
// (Recovered: the points found on disk at open; Stats is one snapshot.)
type Stats struct {
	Appended       uint64 // points handed to the spool (less the encoder's rejects), kept or dropped
	Rejected       uint64 // records refused by the encoder
	Acknowledged   uint64 // points confirmed by the destination
	DeadLettered   uint64 // points set aside as rejected by the destination
	DroppedCap     uint64 // unsent points in segments dropped by the size cap
	DroppedBuffer  uint64 // points refused because unwritten data reached MaxBuffer while the disk took writes (appends outran it)
	DroppedCorrupt uint64 // points in entries found corrupt when read back, skipped
	DroppedDisk    uint64 // points lost because writing failed (disk full, no inode or descriptor, I/O error): refused while unwritten data was at MaxBuffer, or still unwritten at Close
	Recovered      uint64 // unacknowledged points found on disk at open
	TruncatedBytes uint64 // bytes cut from torn or corrupt tails at open
	WriteErrors    uint64 // failed segment opens, writes and fsyncs, ack file and directory updates
	Fsyncs         uint64
	Bytes          int64 // on disk
	Segments       int
	Pending        uint64 // points on disk (or handed to the reader) not yet resolved
	Buffered       uint64 // points in memory, not yet on disk
	// LastError is the background flush's latest failure (a segment open,
	// write or fsync, the ack file), "" once a flush succeeds again.
	LastError string
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("spool closed")

// ErrBufferFull is returned when unwritten data has reached MaxBuffer: appends
// outran the disk (the points are counted in DroppedBuffer) or writing fails
// (DroppedDisk).
var ErrBufferFull = errors.New("spool buffer full")

// segment is one segment file. Its points are consecutive sequence numbers
// ending at last.
type segment struct {
	first   uint64 // first point seq in the file name
	last    uint64 // last point seq written (first-1 when empty)
	points  uint64
	size    int64 // bytes of whole entries
	path    string
	corrupt uint64 // the reader found the entries from this seq on damaged (0: none)
	// The part of it known to be on disk: fsynced (or found at open).
	synced     int64
	syncedLast uint64
	// For a segment the cap removed while the reader held points of it:
	// the last of them.
	inFlightEnd uint64
}

// count is the number of the segment's points with from <= seq <= to.
func (g *segment) count(from, to uint64) uint64 {
	if g.points == 0 {
		return 0
	}
	from, to = max(from, g.last-g.points+1), min(to, g.last)
	if from > to {
		return 0
	}
	return to - from + 1
}

// end is the last seq the reader can hand out: before the damage, if any.
func (g *segment) end() uint64 {
	if g.corrupt > 0 {
		return g.corrupt - 1
	}
	return g.last
}

// Spool is a durable queue of line-protocol points.
type Spool struct {
	opts Options

	// Producer side.
	mu        sync.Mutex
	buf       []byte
	bufPoints int
	enc       record.Encoder
	closed    bool

	// Disk side: files, sequence numbers, readers.
	io         sync.Mutex
	spare      []byte // the other half of the double buffer
	frame      []byte // sealed entries not yet written
	framePts   int
	gzbuf      bytes.Buffer
	gz         *gzip.Writer
	segs       []*segment // sorted; the last is the active one when active is open
	active     *os.File   // the segment being written; nil until the next write needs one
	stale      string     // a file of ours holding no entry, in the way of the next segment
	gone       []*segment // segments the cap removed while the reader held points of them
	nextSeq    uint64
	acked      uint64
	delivered  uint64                 // highest seq the reader handed out
	flushErr   atomic.Pointer[string] // the background flush's latest failure
	startOnce  sync.Once
	ackDirty   bool      // acked is ahead of the ack file
	ackSync    time.Time // when the ack file was last written and fsynced
	ioClosed   bool
	lastSync   time.Time
	dirty      bool // the active segment has data not fsynced
	dirDirty   bool
	notify     chan struct{} // closed and replaced when entries are written
	ackScratch [12]byte
	hdr        [HeaderSize]byte // the header of an entry written from the buffer
	// fsync is (*os.File).Sync; tests make it fail.
	fsync func(*os.File) error

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	// Counters: the producer's change under mu, the others under io, so
	// that Stats, holding both, sees them agree.
	appended, rejected, acknowledged, deadLettered   atomic.Uint64
	droppedCap, droppedBuffer, recovered, truncated  atomic.Uint64
	writeErrors, fsyncs, droppedCorrupt, droppedDisk atomic.Uint64
	unwritten                                        atomic.Int64 // bytes MaxBuffer bounds besides the producer's buffer (unsafe)
	diskFailing                                      atomic.Bool  // the last attempt to write failed
	lock                                             *os.File
}

// Open opens or creates the spool in opts.Dir, recovers what is on disk and starts
// the background flusher. It creates no segment: the first write does.
func Open(opts Options) (*Spool, error) {
	opts.defaults()
	if opts.Dir == "" {
		return nil, errors.New("spool: no directory")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("spool %s: %w", opts.Dir, err)
	}
	s := &Spool{opts: opts, notify: make(chan struct{}), kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.gz, _ = gzip.NewWriterLevel(&s.gzbuf, gzip.BestSpeed)
	lock, err := lockDir(opts.Dir)
	if err != nil {
		return nil, err
	}
	s.lock = lock
	if err := s.recover(); err != nil {
		lock.Close()
		return nil, err
	}
	if !opts.DeferFlush {
		s.Start()
	}
	return s, nil
}

// Start starts the background flush (every FlushInterval, and early when the
// buffer fills); it runs until Close. Calling it again, or after Close, does
// nothing.
func (s *Spool) Start() {
	s.startOnce.Do(func() { go s.flusher() })
}

func (s *Spool) ackPath() string { return filepath.Join(s.opts.Dir, "ack") }

// recover reads the ack file and every segment, cutting torn or corrupt tails.
func (s *Spool) recover() error {
	acked, err := readAck(s.ackPath())
	if err != nil {
		return err
	}
	s.acked = acked
	ents, err := os.ReadDir(s.opts.Dir)
	if err != nil {
		return fmt.Errorf("spool %s: %w", s.opts.Dir, err)
	}
	var sc scanner
	for _, e := range ents { // sorted by name: zero-padded sequence numbers
		first, ok := parseSegName(e.Name())
		if !ok {
			continue // not ours
		}
		seg, err := s.scan(&sc, filepath.Join(s.opts.Dir, e.Name()), first)
		if err != nil {
			return err
		}
		s.segs = append(s.segs, seg)
	}
	s.nextSeq = max(s.acked+1, 1)
	kept := s.segs[:0]
	for _, seg := range s.segs {
		if seg.points > 0 && seg.last >= s.nextSeq {
			s.nextSeq = seg.last + 1
		}
		if seg.points == 0 || seg.last <= s.acked {
			os.Remove(seg.path) // empty or fully acknowledged
			s.dirDirty = true
			continue
		}
		s.recovered.Add(seg.count(s.acked+1, seg.last))
		seg.synced, seg.syncedLast = seg.size, seg.last
		kept = append(kept, seg)
	}
	s.segs = kept
	s.delivered = s.acked
	return nil
}

// scan validates a segment file entry by entry (through sc's bounded buffer),
// cutting it at the first bad entry.
func (s *Spool) scan(sc *scanner, path string, first uint64) (*segment, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", path, err)
	}
	seg := &segment{first: first, last: first - 1, path: path}
	sc.reset(f, fi.Size(), first)
	for {
		h, _, err := sc.entry()
		if err == io.EOF {
			break
		}
		if damaged(err) {
			if terr := os.Truncate(path, sc.off); terr != nil {
				return nil, fmt.Errorf("spool %s: cutting a corrupt tail at %d: %w", path, sc.off, terr)
			}
			s.truncated.Add(uint64(fi.Size() - sc.off))
			break
		}
		if err != nil {
			return nil, fmt.Errorf("spool %s: %w", path, err)
		}
		seg.last = h.LastSeq()
		seg.points += uint64(h.Points)
	}
	seg.size = sc.off
	return seg, nil
}

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
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
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
	sync := s.fsync
	if sync == nil {
		sync = (*os.File).Sync
	}
	if err := sync(s.active); err != nil {
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

// Append encodes records into the spool's buffer. It never waits for the disk:
// when unwritten data has reached MaxBuffer the records are dropped and
// counted (ErrBufferFull). An error also reports records the encoder refused;
// the rest are kept.
func (s *Spool) Append(recs []record.Record) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if len(s.buf)+int(s.unwritten.Load()) >= s.opts.MaxBuffer {
		s.refuse(len(recs))
		s.mu.Unlock()
		return ErrBufferFull
	}
	var rejected int
	var err error
	s.buf, rejected, err = s.enc.Append(s.buf, recs)
	s.bufPoints += len(recs) - rejected
	s.appended.Add(uint64(len(recs) - rejected))
	s.rejected.Add(uint64(rejected))
	full := len(s.buf) >= s.opts.FlushBytes
	s.mu.Unlock()
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return err
}

// refuse counts n points dropped because unwritten data reached MaxBuffer,
// under the reason: writing fails, or appends outran the disk. s.mu is held.
func (s *Spool) refuse(n int) {
	s.appended.Add(uint64(n))
	if s.diskFailing.Load() {
		s.droppedDisk.Add(uint64(n))
	} else {
		s.droppedBuffer.Add(uint64(n))
	}
}

// AppendLines appends lines of line protocol as they are, one point per line
// (a replay of lines set aside earlier). Blank lines and '#' comments are
// skipped; a last line without its newline gets one. It returns how many points
// it appended; like Append it refuses (ErrBufferFull, counted) when unwritten
// data has reached MaxBuffer, so a caller with much to replay flushes in between.
func (s *Spool) AppendLines(b []byte) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	full := len(s.buf)+int(s.unwritten.Load()) >= s.opts.MaxBuffer
	var n int
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		n++
		if !full {
			s.buf = append(append(s.buf, line...), '\n')
		}
	}
	if full {
		s.refuse(n)
		s.mu.Unlock()
		return 0, ErrBufferFull
	}
	s.bufPoints += n
	s.appended.Add(uint64(n))
	s.mu.Unlock()
	return n, nil
}

// Write implements sink.Sink.
func (s *Spool) Write(recs []record.Record) error { return s.Append(recs) }

func (s *Spool) flusher() {
	defer close(s.done)
	t := time.NewTicker(s.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		case <-s.kick:
		}
		if err := s.Flush(); err != nil {
			msg := err.Error()
			s.flushErr.Store(&msg)
		} else {
			s.flushErr.Store(nil)
		}
	}
}

// Flush seals the buffer into entries, writes them and fsyncs if the fsync
// interval has passed. Entries that cannot be written stay in memory for the
// next flush (and count against MaxBuffer); a segment that cannot be opened is
// tried again then.
func (s *Spool) Flush() error {
	return s.flush(false)
}

// Sync is Flush with an fsync regardless of the interval.
func (s *Spool) Sync() error { return s.flush(true) }

func (s *Spool) flush(forceSync bool) error {
	s.io.Lock()
	defer s.io.Unlock()
	if s.ioClosed {
		return ErrClosed
	}
	// Swap the producer's buffer for the spare half.
	s.mu.Lock()
	data, points := s.buf, s.bufPoints
	s.buf, s.bufPoints = s.spare[:0], 0
	s.mu.Unlock()
	s.spare = data
	var err error
	switch {
	case len(s.frame) > 0: // entries a failed write left go first
		if points > 0 {
			s.seal(data, points)
		}
		err = s.writeFrame()
	case points > 0:
		err = s.writeData(data, points)
	}
	if len(s.frame) > 0 && cap(s.spare) > 2*s.opts.FlushBytes {
		s.spare = nil // the frame holds a copy while writing fails: let the large half go
	}
	if (s.dirty || s.dirDirty) && (forceSync || time.Since(s.lastSync) >= s.opts.FsyncInterval || s.unsynced() >= int64(s.opts.MaxBuffer/2)) {
		err = errors.Join(err, s.syncLocked())
	}
	if s.ackDirty && (forceSync || time.Since(s.ackSync) >= s.opts.FsyncInterval) {
		err = errors.Join(err, s.persistAck())
	}
	s.unwritten.Store(s.unsafe())
	return err
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

// seal frames data (points points) as entries at the end of s.frame: a copy,
// for entries that wait for a write that failed.
func (s *Spool) seal(data []byte, points int) {
	for len(data) > 0 {
		n, pts := s.cut(data, points)
		payload, flags := s.payload(data[:n])
		s.frame = AppendEntry(s.frame, Header{FirstSeq: s.nextSeq, Points: uint32(pts), Flags: flags}, payload)
		s.framePts += pts
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

// writeEntry writes one entry of data to the active segment, opening one
// first if there is none.
func (s *Spool) writeEntry(data []byte, points int) error {
	if s.active == nil {
		if err := s.openSegment(); err != nil {
			s.writeFailed()
			return err
		}
	}
	payload, flags := s.payload(data)
	putHeader(&s.hdr, Header{FirstSeq: s.nextSeq, Points: uint32(points), Flags: flags}, payload)
	if err := s.write(s.hdr[:], payload); err != nil {
		return err
	}
	s.nextSeq += uint64(points)
	return s.wrote(points, HeaderSize+len(payload))
}

// writeFrame writes the sealed entries to the active segment, opening one
// first if there is none.
func (s *Spool) writeFrame() error {
	if s.active == nil {
		if err := s.openSegment(); err != nil {
			s.writeFailed()
			return err
		}
	}
	if err := s.write(s.frame); err != nil {
		return err
	}
	points, n := s.framePts, len(s.frame)
	s.frame, s.framePts = s.frame[:0], 0
	if cap(s.frame) > 2*s.opts.FlushBytes {
		s.frame = nil
	}
	return s.wrote(points, n)
}

// write appends bufs (whole entries) to the active segment. On failure a
// partial entry is cut and the segment ended: whatever broke the file (a cut
// that failed, a bad descriptor, a bad block), the next attempt starts a new
// one.
func (s *Spool) write(bufs ...[]byte) error {
	g := s.segs[len(s.segs)-1]
	var written int
	for _, b := range bufs {
		n, err := s.active.Write(b)
		written += n
		if err == nil {
			continue
		}
		s.writeFailed()
		err = fmt.Errorf("spool %s: %w", g.path, err)
		if written > 0 { // take back the partial entry so that the file stays valid
			if terr := s.active.Truncate(g.size); terr != nil {
				// Garbage follows the last entry: the reader and the next
				// open stop there, and nothing more goes after it.
				err = errors.Join(err, fmt.Errorf("spool %s: cutting a partial write at %d: %w", g.path, g.size, terr))
			}
		}
		return errors.Join(err, s.closeActive(true))
	}
	return nil
}

// wrote accounts n bytes of entries holding the points up to nextSeq-1 just
// written to the active segment, wakes the reader, and rolls the segment
// once it is full.
func (s *Spool) wrote(points, n int) error {
	g := s.segs[len(s.segs)-1]
	g.last = s.nextSeq - 1
	g.points += uint64(points)
	g.size += int64(n)
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

// syncLocked fsyncs the active segment and the directory.
func (s *Spool) syncLocked() error {
	s.lastSync = time.Now()
	err := s.syncActive()
	if s.dirDirty {
		d, derr := os.Open(s.opts.Dir)
		if derr == nil {
			derr = d.Sync()
			d.Close()
		}
		if derr != nil {
			s.writeErrors.Add(1)
			return errors.Join(err, fmt.Errorf("spool %s: fsync: %w", s.opts.Dir, derr))
		}
		s.dirDirty = false
	}
	return err
}

// Batch is a run of consecutive points handed to a shipper.
type Batch struct {
	FirstSeq, LastSeq uint64
	Points            int
}

// Ack resolves every point up to b.LastSeq: delivered, except deadLettered of
// them that the shipper set aside. Fully resolved segments are deleted. The
// position reaches the ack file, fsynced, within the fsync interval (at once
// after Close): a crash re-sends at most that interval's points, which InfluxDB
// stores once.
func (s *Spool) Ack(b Batch, deadLettered int) error {
	s.io.Lock()
	defer s.io.Unlock()
	if b.LastSeq <= s.acked {
		if s.ioClosed && s.ackDirty {
			return s.persistAck()
		}
		return nil
	}
	s.acked = b.LastSeq
	s.ackDirty = true
	s.deadLettered.Add(uint64(deadLettered))
	s.acknowledged.Add(uint64(b.Points - deadLettered))
	for len(s.segs) > 0 && s.segs[0].last <= s.acked {
		if s.active != nil && len(s.segs) == 1 {
			break // the segment being written stays
		}
		os.Remove(s.segs[0].path)
		s.dirDirty = true
		s.segs = s.segs[1:]
	}
	for len(s.gone) > 0 && s.gone[0].last <= s.acked {
		s.gone = s.gone[1:]
	}
	if s.ioClosed {
		return s.persistAck()
	}
	return nil
}

// persistAck replaces the ack file: write a temporary file, fsync it, rename it
// over the old one and fsync the directory.
func (s *Spool) persistAck() error {
	s.ackSync = time.Now()
	binary.LittleEndian.PutUint64(s.ackScratch[:], s.acked)
	binary.LittleEndian.PutUint32(s.ackScratch[8:], crc32.Checksum(s.ackScratch[:8], castagnoli))
	tmp := s.ackPath() + ".tmp"
	err := func() error {
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		_, err = f.Write(s.ackScratch[:])
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, s.ackPath()); err != nil {
			return err
		}
		d, err := os.Open(s.opts.Dir)
		if err != nil {
			return err
		}
		err = d.Sync()
		d.Close()
		return err
	}()
	if err != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("spool ack %s: %w", s.ackPath(), err)
	}
	s.fsyncs.Add(2)
	s.ackDirty = false
	return nil
}

// forgetInFlight counts the in-flight points the cap removed from disk as
// dropped once nobody can acknowledge them any more, and resolves them.
func (s *Spool) forgetInFlight() {
	for _, g := range s.gone {
		s.droppedCap.Add(g.count(s.acked+1, g.inFlightEnd))
		if g.last > s.acked {
			s.acked = g.last
			s.ackDirty = true
		}
	}
	s.gone = nil
}

// Stats returns the counters.
func (s *Spool) Stats() Stats {
	s.io.Lock()
	defer s.io.Unlock()
	var st Stats
	for _, g := range s.segs {
		st.Bytes += g.size
		st.Pending += g.count(s.acked+1, g.end())
	}
	for _, g := range s.gone { // in the shipper's hands only
		st.Pending += g.count(s.acked+1, g.inFlightEnd)
	}
	st.Segments = len(s.segs)
	if p := s.flushErr.Load(); p != nil {
		st.LastError = *p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st.Buffered = uint64(s.bufPoints) + s.frameUnresolved()
	st.Appended, st.Rejected = s.appended.Load(), s.rejected.Load()
	st.Acknowledged, st.DeadLettered = s.acknowledged.Load(), s.deadLettered.Load()
	st.DroppedCap, st.DroppedBuffer = s.droppedCap.Load(), s.droppedBuffer.Load()
	st.DroppedCorrupt, st.DroppedDisk = s.droppedCorrupt.Load(), s.droppedDisk.Load()
	st.Recovered, st.TruncatedBytes = s.recovered.Load(), s.truncated.Load()
	st.WriteErrors, st.Fsyncs = s.writeErrors.Load(), s.fsyncs.Load()
	return st
}

// frameUnresolved is how many of the frame's points are not acknowledged:
// a failed fsync takes back entries the shipper may already hold.
func (s *Spool) frameUnresolved() uint64 {
	n := uint64(s.framePts)
	if first := s.nextSeq - n; s.acked >= first {
		n -= min(s.acked, s.nextSeq-1) - first + 1
	}
	return n
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.opts.Dir }

// Close writes and fsyncs everything accepted, then closes the files. What it
// cannot write (the disk full or failing) is counted in DroppedDisk and named
// in the error. Readers return ErrClosed.
func (s *Spool) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.startOnce.Do(func() { close(s.done) }) // never started: nothing to wait for
	<-s.done
	s.io.Lock()
	s.forgetInFlight() // whatever the shipper has not acknowledged by now is re-read after a restart, if still on disk
	s.io.Unlock()
	err := s.Sync()
	if s.Stats().Buffered > 0 {
		// A failed fsync takes entries back into memory (takeBack); they go
		// to a new segment if the disk takes them now.
		err = s.Sync()
	}
	s.io.Lock()
	defer s.io.Unlock()
	s.mu.Lock()
	if lost := uint64(s.bufPoints) + s.frameUnresolved(); lost > 0 {
		s.droppedDisk.Add(lost)
		err = errors.Join(err, fmt.Errorf("spool %s: %d points could not be written: dropped", s.opts.Dir, lost))
	}
	s.buf, s.bufPoints, s.frame, s.framePts, s.spare = nil, 0, nil, 0, nil
	s.unwritten.Store(0)
	s.mu.Unlock()
	if s.active != nil {
		err = errors.Join(err, s.closeActive(true))
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].last <= s.acked && !s.ackDirty {
		// Fully acknowledged, and the ack file says so: not needed at the next open.
		os.Remove(s.segs[n-1].path)
		s.segs = s.segs[:n-1]
	}
	s.ioClosed = true
	close(s.notify)
	s.notify = nil
	s.lock.Close() // releases the directory lock
	return err
}
