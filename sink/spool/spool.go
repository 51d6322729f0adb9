package spool

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io/fs"
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
	FlushInterval time.Duration // seal and write the buffer this long after its first point (default 100 ms)
	FsyncInterval time.Duration // fsync at most this often (default 1 s)
	FlushBytes    int           // seal early when the buffer reaches this (default 1 MiB)
	MaxBuffer     int           // appends beyond this much unwritten data (buffered and sealed) are dropped and counted (default 32 MiB)
	Compress      bool          // gzip each entry (BestSpeed)
	// DeferFlush leaves the background flush to Start (an agent starts it
	// when it runs, so that opening starts nothing); Open starts it otherwise.
	DeferFlush bool
	// IdleFlush is for a producer that calls Idle whenever it stops
	// appending (the agent's writer, its queue empty): the buffer's first
	// point arms no timer, whose wake-up FlushInterval later Idle would
	// make for nothing (the runtime wakes for a stopped timer too); the
	// buffer is written at Idle, or at an Append FlushInterval after its
	// first point when the producer never rests.
	IdleFlush bool
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
//     being written (together they hold at most MaxBuffer, but each may have
//     grown to it in its turn). While writing fails, the entries waiting for
//     it, the points buffered behind them and the bytes written but not yet
//     fsynced (which a failed fsync takes back) are bounded together by
//     MaxBuffer, and taking back copies them once more;
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

	// disk is held, before io, by whoever writes, rolls, fsyncs or closes
	// the files (a flush, Close, an acknowledgement after Close): one at a
	// time. Every fsync lets go of io while it runs (syncFile), so that the
	// reader, acknowledgements and Stats never wait for an fsync (hundreds
	// of ms on an SD card); none of them writes, rolls or closes a segment.
	disk sync.Mutex

	// Disk side: files, sequence numbers, readers.
	io         sync.Mutex
	spare      []byte    // the other half of the double buffer
	flight     int       // points the flush under way took from the buffer and has neither written nor sealed
	firstAt    time.Time // when the buffer received its first point (IdleFlush)
	frame      []byte    // sealed entries not yet written
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
	dirty      bool      // the active segment has data not fsynced
	dirtyAt    time.Time // when the active segment's oldest data not fsynced was written
	dirDirty   bool
	notify     chan struct{} // closed and replaced when entries are written
	ackScratch [12]byte
	hdr        [HeaderSize]byte // the header of an entry written from the buffer
	// fsync, when set, replaces (*os.File).Sync for every fsync of the
	// spool (segments, the ack file, the directory): tests make it fail or
	// take long.
	fsync func(*os.File) error

	kick chan struct{} // the buffer is full: flush now
	// The flusher's timer: armed by the first point appended to an empty
	// buffer, an acknowledgement, or what the last flush left due.
	tmu      sync.Mutex
	timer    *time.Timer
	armed    bool
	deadline time.Time
	flushes  atomic.Uint64 // the background flusher's flushes (tests count its wake-ups)
	stop     chan struct{}
	done     chan struct{}

	// Counters: the producer's change under mu, the others under io, so
	// that Stats, holding both, sees them agree.
	appended, rejected, acknowledged, deadLettered   atomic.Uint64
	droppedCap, droppedBuffer, recovered, truncated  atomic.Uint64
	writeErrors, fsyncs, droppedCorrupt, droppedDisk atomic.Uint64
	unwritten                                        atomic.Int64 // bytes MaxBuffer bounds besides the producer's buffer: the half being written, and unsafe
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
	if err := makeDir(opts.Dir); err != nil {
		return nil, err
	}
	s := &Spool{opts: opts, notify: make(chan struct{}), kick: make(chan struct{}, 1), timer: time.NewTimer(time.Hour), stop: make(chan struct{}), done: make(chan struct{})}
	s.timer.Stop()
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

// makeDir creates the spool's directory 0700 (its parents 0755), or narrows an
// existing one to its owner: the points may carry what only the agent's user
// should read (a receiver's address, a host name), and a directory left 0755
// by an older agent would keep them open. Files are created 0600 in it.
func makeDir(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return fmt.Errorf("spool %s: %w", dir, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("spool %s: %w", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("spool %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("spool %s: not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		mode := st.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky) &^ 0o077
		if err := os.Chmod(dir, mode); err != nil {
			return fmt.Errorf("spool %s: its mode %#o lets other users read the spool and cannot be narrowed to %#o (chmod it): %w",
				dir, st.Mode().Perm(), mode.Perm(), err)
		}
	}
	return nil
}

// Start starts the background flush (FlushInterval after the buffer receives
// points, and early when it fills; it sleeps while nothing is due); it runs
// until Close. Calling it again, or after Close, does
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
	seg := &segment{first: first, last: first - 1, path: path}
	size, err := walkSegment(f, path, first, sc, func(h Header, _ []byte) error {
		seg.last = h.LastSeq()
		seg.points += uint64(h.Points)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if sc.off < size {
		if err := os.Truncate(path, sc.off); err != nil {
			return nil, fmt.Errorf("spool %s: cutting a corrupt tail at %d: %w", path, sc.off, err)
		}
		s.truncated.Add(uint64(size - sc.off))
	}
	seg.size = sc.off
	return seg, nil
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
	st.Buffered = uint64(s.bufPoints) + uint64(s.flight) + s.frameUnresolved()
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
	s.disk.Lock()
	defer s.disk.Unlock()
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
	// Acknowledgements that came while the last fsyncs ran (io is let go
	// meanwhile) reach the ack file now: after Close, Ack writes it itself.
	for s.ackDirty {
		if aerr := s.persistAck(); aerr != nil {
			err = errors.Join(err, aerr)
			break
		}
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
