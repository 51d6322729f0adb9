package spool

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
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

// Stats are the spool's counters, shipped with the data.
type Stats struct {
	Appended       uint64 // points accepted
	Rejected       uint64 // records refused by the encoder
	Acknowledged   uint64 // points confirmed by the destination
	DeadLettered   uint64 // points set aside as rejected by the destination
	DroppedCap     uint64 // unsent points in segments dropped by the size cap
	DroppedBuffer  uint64 // points dropped because unwritten data exceeded MaxBuffer
	DroppedCorrupt uint64 // points in entries found corrupt when read back, skipped
	Recovered      uint64 // unacknowledged points found on disk at open
	TruncatedBytes uint64 // bytes cut from torn or corrupt tails at open
	WriteErrors    uint64
	Fsyncs         uint64
	Bytes          int64 // on disk
	Segments       int
	Pending        uint64 // points written but not yet resolved
	// LastError is the background flush's latest failure (a segment write,
	// an fsync, the ack file), "" once a flush succeeds again.
	LastError string
}

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("spool closed")

// ErrBufferFull is returned when appends outrun the disk; the points are counted
// in DroppedBuffer.
var ErrBufferFull = errors.New("spool buffer full")

type segment struct {
	first  uint64 // first point seq in the file name
	last   uint64 // last point seq written (first-1 when empty)
	points uint64
	size   int64
	path   string
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
	io             sync.Mutex
	spare          []byte // the other half of the double buffer
	frame          []byte // sealed entries not yet written
	framePts       int
	gzbuf          bytes.Buffer
	gz             *gzip.Writer
	segs           []*segment // sorted, the last is active
	active         *os.File
	nextSeq        uint64
	acked          uint64
	delivered      uint64                 // highest seq the reader handed out
	lostThrough    uint64                 // highest in-flight seq whose segment the cap removed
	corruptThrough uint64                 // highest seq skipped as corrupt by the reader
	flushErr       atomic.Pointer[string] // the background flush's latest failure
	startOnce      sync.Once
	ackDirty       bool      // acked is ahead of the ack file
	ackSync        time.Time // when the ack file was last written and fsynced
	ioClosed       bool
	lastSync       time.Time
	dirty          bool
	dirDirty       bool
	notify         chan struct{} // closed and replaced when entries are written
	ackScratch     [12]byte

	kick chan struct{}
	stop chan struct{}
	done chan struct{}

	appended, rejected, acknowledged, deadLettered  atomic.Uint64
	droppedCap, droppedBuffer, recovered, truncated atomic.Uint64
	writeErrors, fsyncs, droppedCorrupt             atomic.Uint64
	unwritten                                       atomic.Int64 // bytes sealed but not yet on disk
	lock                                            *os.File
}

// Open opens or creates the spool in opts.Dir, recovers what is on disk and starts
// the background flusher.
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

func segName(first uint64) string { return fmt.Sprintf("%020d.seg", first) }

// recover reads the ack file and every segment, cutting torn or corrupt tails.
func (s *Spool) recover() error {
	if b, err := os.ReadFile(s.ackPath()); err == nil {
		if len(b) == 12 && crc32.Checksum(b[:8], castagnoli) == binary.LittleEndian.Uint32(b[8:]) {
			s.acked = binary.LittleEndian.Uint64(b)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("spool %s: %w", s.ackPath(), err)
	}
	names, err := filepath.Glob(filepath.Join(s.opts.Dir, "*.seg"))
	if err != nil {
		return err
	}
	for _, p := range names {
		first, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(p), ".seg"), 10, 64)
		if err != nil || first == 0 {
			continue // not ours
		}
		seg, err := s.scan(p, first)
		if err != nil {
			return err
		}
		s.segs = append(s.segs, seg)
	}
	sort.Slice(s.segs, func(i, j int) bool { return s.segs[i].first < s.segs[j].first })
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
		s.recovered.Add(seg.last - max(seg.first-1, s.acked))
		kept = append(kept, seg)
	}
	s.segs = kept
	s.delivered = s.acked
	return s.openActive()
}

// scan validates a segment file, truncating it at the first bad entry.
func (s *Spool) scan(path string, first uint64) (*segment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", path, err)
	}
	seg := &segment{first: first, last: first - 1, path: path}
	off := 0
	for off < len(b) {
		h, _, n, err := DecodeEntry(b[off:])
		if err == nil && h.FirstSeq < seg.first {
			err = fmt.Errorf("%w: seq %d before segment start %d", ErrCorrupt, h.FirstSeq, seg.first)
		}
		if err != nil {
			if terr := os.Truncate(path, int64(off)); terr != nil {
				return nil, fmt.Errorf("spool %s: cutting corrupt tail at %d: %w", path, off, terr)
			}
			s.truncated.Add(uint64(len(b) - off))
			break
		}
		seg.last = h.LastSeq()
		seg.points += uint64(h.Points)
		off += n
	}
	seg.size = int64(off)
	return seg, nil
}

// openActive starts a new segment at nextSeq.
func (s *Spool) openActive() error {
	p := filepath.Join(s.opts.Dir, segName(s.nextSeq))
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("spool: %w", err)
	}
	if n := len(s.segs); n > 0 && s.segs[n-1].path == p {
		s.segs = s.segs[:n-1] // reopened the same (empty) file
	}
	s.active = f
	s.segs = append(s.segs, &segment{first: s.nextSeq, last: s.nextSeq - 1, size: st.Size(), path: p})
	s.dirDirty = true
	return nil
}

// Append encodes records into the spool's buffer. It never waits for the disk:
// when unwritten data exceeds MaxBuffer the records are dropped and counted. An
// error also reports records the encoder refused; the rest are kept.
func (s *Spool) Append(recs []record.Record) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if len(s.buf)+int(s.unwritten.Load()) >= s.opts.MaxBuffer {
		s.mu.Unlock()
		s.droppedBuffer.Add(uint64(len(recs)))
		return ErrBufferFull
	}
	var rejected int
	var err error
	s.buf, rejected, err = s.enc.Append(s.buf, recs)
	s.bufPoints += len(recs) - rejected
	full := len(s.buf) >= s.opts.FlushBytes
	s.mu.Unlock()
	s.appended.Add(uint64(len(recs) - rejected))
	s.rejected.Add(uint64(rejected))
	if full {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
	return err
}

// AppendLines appends lines of line protocol as they are, one point per line
// (a replay of lines set aside earlier). Blank lines and '#' comments are
// skipped; a last line without its newline gets one. It returns how many points
// it appended; like Append it refuses (ErrBufferFull, counted) when unwritten
// data exceeds MaxBuffer, so a caller with much to replay flushes in between.
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
		s.mu.Unlock()
		s.droppedBuffer.Add(uint64(n))
		return 0, ErrBufferFull
	}
	s.bufPoints += n
	s.mu.Unlock()
	s.appended.Add(uint64(n))
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

// Flush seals the buffer into an entry, writes it and fsyncs if the fsync
// interval has passed.
func (s *Spool) Flush() error {
	return s.flush(false)
}

// Sync is Flush with an fsync regardless of the interval.
func (s *Spool) Sync() error { return s.flush(true) }

func (s *Spool) flush(forceSync bool) error {
	s.io.Lock()
	defer s.io.Unlock()
	// Swap the producer's buffer for the spare half.
	s.mu.Lock()
	data, points := s.buf, s.bufPoints
	s.buf, s.bufPoints = s.spare[:0], 0
	s.mu.Unlock()
	s.spare = data
	if points > 0 {
		s.seal(data, points)
	}
	var err error
	if len(s.frame) > 0 {
		err = s.writeFrame()
	}
	if s.dirty && (forceSync || time.Since(s.lastSync) >= s.opts.FsyncInterval) {
		err = errors.Join(err, s.syncLocked())
	}
	if s.ackDirty && (forceSync || time.Since(s.ackSync) >= s.opts.FsyncInterval) {
		err = errors.Join(err, s.persistAck())
	}
	s.unwritten.Store(int64(len(s.frame)))
	return err
}

// seal frames data (points points) as one entry at the end of s.frame.
func (s *Spool) seal(data []byte, points int) {
	h := Header{FirstSeq: s.nextSeq, Points: uint32(points)}
	payload := data
	if s.opts.Compress {
		s.gzbuf.Reset()
		s.gz.Reset(&s.gzbuf)
		s.gz.Write(data)
		s.gz.Close()
		payload = s.gzbuf.Bytes()
		h.Flags |= FlagGzip
	}
	s.frame = AppendEntry(s.frame, h, payload)
	s.framePts += points
	s.nextSeq += uint64(points)
}

func (s *Spool) writeFrame() error {
	seg := s.segs[len(s.segs)-1]
	n, err := s.active.Write(s.frame)
	if err != nil {
		s.writeErrors.Add(1)
		if n > 0 { // take back a partial entry so the file stays valid
			s.active.Truncate(seg.size)
		}
		// The sealed entries stay for the next flush; appends are refused and
		// counted while they and the buffer together exceed MaxBuffer.
		s.unwritten.Store(int64(len(s.frame)))
		return fmt.Errorf("spool %s: %w", seg.path, err)
	}
	// Account the entries just written.
	for off := 0; off < len(s.frame); {
		h, _, n, _ := DecodeEntry(s.frame[off:])
		seg.last = h.LastSeq()
		seg.points += uint64(h.Points)
		off += n
	}
	seg.size += int64(len(s.frame))
	s.frame, s.framePts = s.frame[:0], 0
	s.dirty = true
	close(s.notify)
	s.notify = make(chan struct{})
	var rollErr error
	if seg.size >= s.opts.SegmentBytes {
		rollErr = s.roll()
	}
	s.enforceCap()
	return rollErr
}

// roll closes the active segment (fsynced) and starts the next.
func (s *Spool) roll() error {
	if err := s.active.Sync(); err == nil {
		s.fsyncs.Add(1)
	}
	s.active.Close()
	return s.openActive()
}

// enforceCap drops whole oldest segments while the spool is over MaxBytes,
// counting the points in them that were neither acknowledged nor handed to the
// shipper. Points in flight (handed out, not acknowledged) are remembered in
// lostThrough: the shipper still holds them and normally acknowledges them, but
// if it re-opens its reader or the spool closes first they are gone, and are
// counted then (forgetInFlight).
func (s *Spool) enforceCap() {
	var total int64
	for _, seg := range s.segs {
		total += seg.size
	}
	for total > s.opts.MaxBytes && len(s.segs) > 1 {
		seg := s.segs[0]
		done := max(seg.first-1, s.acked, s.delivered, s.corruptThrough)
		if seg.last > done {
			s.droppedCap.Add(seg.last - done)
		}
		if inflight := min(seg.last, s.delivered); inflight > max(s.acked, s.lostThrough) {
			s.lostThrough = inflight
		}
		os.Remove(seg.path)
		s.dirDirty = true
		total -= seg.size
		s.segs = s.segs[1:]
	}
}

func (s *Spool) syncLocked() error {
	s.lastSync = time.Now()
	if err := s.active.Sync(); err != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("spool fsync: %w", err)
	}
	s.fsyncs.Add(1)
	s.dirty = false
	if s.dirDirty {
		if d, err := os.Open(s.opts.Dir); err == nil {
			d.Sync()
			d.Close()
		}
		s.dirDirty = false
	}
	return nil
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
	for len(s.segs) > 1 && s.segs[0].last <= s.acked {
		os.Remove(s.segs[0].path)
		s.dirDirty = true
		s.segs = s.segs[1:]
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
	if s.lostThrough > s.acked {
		s.droppedCap.Add(s.lostThrough - s.acked)
		s.acked = s.lostThrough
		s.ackDirty = true
	}
}

// Stats returns the counters.
func (s *Spool) Stats() Stats {
	s.io.Lock()
	var bytes int64
	for _, seg := range s.segs {
		bytes += seg.size
	}
	nseg := len(s.segs)
	var pending uint64
	if s.nextSeq-1 > s.acked {
		for _, seg := range s.segs {
			if seg.last > s.acked && seg.points > 0 {
				pending += seg.last - max(seg.first-1, s.acked)
			}
		}
	}
	s.io.Unlock()
	var lastErr string
	if p := s.flushErr.Load(); p != nil {
		lastErr = *p
	}
	return Stats{
		Appended: s.appended.Load(), Rejected: s.rejected.Load(), Acknowledged: s.acknowledged.Load(),
		DeadLettered: s.deadLettered.Load(), DroppedCap: s.droppedCap.Load(), DroppedBuffer: s.droppedBuffer.Load(),
		DroppedCorrupt: s.droppedCorrupt.Load(),
		Recovered:      s.recovered.Load(), TruncatedBytes: s.truncated.Load(), WriteErrors: s.writeErrors.Load(),
		Fsyncs: s.fsyncs.Load(), Bytes: bytes, Segments: nseg, Pending: pending,
		LastError: lastErr,
	}
}

// Dir is the spool's directory.
func (s *Spool) Dir() string { return s.opts.Dir }

// Close writes and fsyncs everything accepted, then closes the files. Readers
// return ErrClosed.
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
	s.io.Lock()
	defer s.io.Unlock()
	s.ioClosed = true
	err = errors.Join(err, s.active.Close())
	close(s.notify)
	s.notify = nil
	s.lock.Close() // releases the directory lock
	return err
}

// Entry is one entry as a reader returns it.
type Entry struct {
	Header
	Lines []byte // line protocol, decompressed; valid until the next Next
}

// Reader hands out entries in order, starting after the acknowledged position.
// A spool has one reader: its shipper.
type Reader struct {
	s      *Spool
	f      *os.File
	path   string
	off    int64
	raw    []byte
	out    bytes.Buffer
	gz     *gzip.Reader
	closed bool
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
		pos := max(s.acked, s.delivered, s.corruptThrough) + 1
		var seg *segment
		for _, g := range s.segs {
			if g.last >= pos && g.points > 0 {
				seg = g
				break
			}
		}
		if seg == nil {
			return Entry{}, s.notify, nil
		}
		if r.path != seg.path {
			if r.f != nil {
				r.f.Close()
			}
			f, err := os.Open(seg.path)
			if err != nil {
				return Entry{}, nil, fmt.Errorf("spool reader: %w", err)
			}
			r.f, r.path, r.off = f, seg.path, 0
		}
		if r.off >= seg.size {
			// Everything here is resolved; the next segment holds pos.
			r.f.Close()
			r.f, r.path = nil, ""
			if seg == s.segs[len(s.segs)-1] {
				return Entry{}, s.notify, nil
			}
			continue
		}
		h, payload, n, err := r.readAt(seg)
		if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum) || errors.Is(err, ErrShort) {
			// Damaged after it was written (open checked it): skip the rest of
			// the segment, counted, rather than stop shipping for good.
			s.droppedCorrupt.Add(seg.last - pos + 1)
			s.corruptThrough = seg.last
			r.f.Close()
			r.f, r.path = nil, ""
			if seg == s.segs[len(s.segs)-1] && len(s.frame) == 0 {
				// The damage is in the segment being written: later entries
				// go to a new one, not behind the damage (where the next read
				// would drop them too).
				if err := s.roll(); err != nil {
					return Entry{}, nil, err
				}
			}
			continue
		}
		if err != nil {
			return Entry{}, nil, err
		}
		r.off += int64(n)
		if h.LastSeq() < pos {
			continue
		}
		lines := payload
		if h.Flags&FlagGzip != 0 {
			if lines, err = r.gunzip(payload); err != nil {
				return Entry{}, nil, fmt.Errorf("spool %s at %d: %w", seg.path, r.off-int64(n), err)
			}
		}
		s.delivered = h.LastSeq()
		return Entry{Header: h, Lines: lines}, nil, nil
	}
}

func (r *Reader) readAt(seg *segment) (Header, []byte, int, error) {
	avail := seg.size - r.off
	if int64(cap(r.raw)) < min(avail, HeaderSize+MaxPayload) {
		r.raw = make([]byte, 0, min(avail, HeaderSize+MaxPayload))
	}
	hdr := r.raw[:HeaderSize]
	if _, err := r.f.ReadAt(hdr, r.off); err != nil {
		return Header{}, nil, 0, fmt.Errorf("spool %s at %d: %w", seg.path, r.off, err)
	}
	length := int64(binary.LittleEndian.Uint32(hdr))
	if length > MaxPayload || HeaderSize+length > avail {
		return Header{}, nil, 0, fmt.Errorf("spool %s at %d: %w", seg.path, r.off, ErrCorrupt)
	}
	b := r.raw[:HeaderSize+length]
	if _, err := r.f.ReadAt(b, r.off); err != nil {
		return Header{}, nil, 0, fmt.Errorf("spool %s at %d: %w", seg.path, r.off, err)
	}
	h, payload, n, err := DecodeEntry(b)
	if err != nil {
		return Header{}, nil, 0, fmt.Errorf("spool %s at %d: %w", seg.path, r.off, err)
	}
	return h, payload, n, nil
}

func (r *Reader) gunzip(p []byte) ([]byte, error) {
	var err error
	if r.gz == nil {
		r.gz, err = gzip.NewReader(bytes.NewReader(p))
	} else {
		err = r.gz.Reset(bytes.NewReader(p))
	}
	if err != nil {
		return nil, err
	}
	r.out.Reset()
	if _, err := io.Copy(&r.out, r.gz); err != nil {
		return nil, err
	}
	return r.out.Bytes(), nil
}

// Close releases the reader's file.
func (r *Reader) Close() error {
	if r.f != nil {
		return r.f.Close()
	}
	return nil
}
