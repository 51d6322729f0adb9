package spool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

// Issue 32 item 2: a BeagleBone's SD card can take hundreds of ms per fsync.
// These tests give every fsync of the spool 500 ms (a sleep, then the real
// fsync) while a producer appends at a steady rate, and check what the spool
// kept, what it refused and counted, and that Append never waited for the
// disk; and with an fsync that hangs, that the reader, acknowledgements and
// Stats do not wait for it either, and that what they change meanwhile is
// kept.

// slowTimeBase is the time of point 0 of a slow-disk run; point i is stamped
// slowTimeBase + i µs, so the stamp numbers the point.
const slowTimeBase = 1_700_000_000_000_000_000

// slowRecords fills recs with points from, from+1, ... as an edge of a GPIO
// line (the agent's gpio_event: 187 bytes of line protocol, the same for every
// point of a run).
func slowRecords(recs []record.Record, from int) {
	for i := range recs {
		n := from + i
		r := &recs[i]
		if r.Tags == nil {
			r.Measurement = "gpio_event"
			r.Tags = []record.Tag{{Key: "host", Value: "bbb1"}, {Key: "chip", Value: "gpiochip0"},
				{Key: "line", Value: "17"}, {Key: "name", Value: "pps"}, {Key: "edge", Value: "rising"}}
			r.Fields = make([]record.Field, 5)
		}
		r.Fields[0] = record.Int("kernel_ns", 100_000_000_000_000+int64(n)*1000)
		r.Fields[1] = record.String("clock", "monotonic")
		r.Fields[2] = record.Uint("seqno", 10_000_000+uint64(n))
		r.Fields[3] = record.Uint("line_seqno", 10_000_000+uint64(n))
		r.Fields[4] = record.Int("uncertainty_ns", 850)
		r.TimeNS = slowTimeBase + int64(n)*1000
	}
}

// slowLineBytes is the length of one line of slowRecords.
var slowLineBytes = func() int {
	recs := make([]record.Record, 1)
	slowRecords(recs, 0)
	var enc record.Encoder
	b, _, _ := enc.Append(nil, recs)
	return len(b)
}()

// slowDisk is one run: a producer appending rate points a second for dur, in
// Appends of at most batch points, to a spool whose every fsync (segments,
// directory, ack file) takes delay more than the disk's; with ship, a shipper
// reads every entry as it is written and acknowledges it at once (an InfluxDB
// that keeps up), so that the ack file and the directory are fsynced too.
type slowDisk struct {
	opts  Options
	delay time.Duration
	rate  float64
	dur   time.Duration
	batch int
	ship  bool
}

// slowResult is what a run measured.
type slowResult struct {
	kept    []bool // kept[i]: point i was accepted (its Append returned nil)
	shipped []int  // the points the shipper read and acknowledged, in order
	// stats are the spool's counters after Close.
	stats   Stats
	refused int // points in Appends refused with ErrBufferFull
	// peakUnsafe is the most line-protocol bytes accepted and not yet
	// fsynced, sampled as each fsync returns (they only shrink then).
	peakUnsafe int64
	// peakUnwritten is the most the spool counted against MaxBuffer
	// (buffered, being written, sealed, written and not fsynced: with gzip,
	// what is written counts compressed), sampled after each Append.
	peakUnwritten int64
	// maxAppend is the longest an Append took; duringFsync counts the
	// Appends that returned while an fsync was in flight.
	maxAppend   time.Duration
	duringFsync int
	fsyncs      int           // slow fsyncs
	fsyncBusy   time.Duration // time spent in them
	elapsed     time.Duration // appending
	// segments is how many segments were written, bytes how many bytes
	// of them (as each was last fsynced).
	segments int
	bytes    int64
}

// run opens a spool in dir, appends (and ships), closes it and returns what
// happened.
func (sd slowDisk) run(tb testing.TB, dir string) slowResult {
	tb.Helper()
	o := sd.opts
	o.Dir, o.DeferFlush = dir, true
	s, err := Open(o)
	if err != nil {
		tb.Fatal(err)
	}
	var (
		inFsync atomic.Bool
		mu      sync.Mutex // guards the four below
		durable uint64     // seq of the last point fsynced (point i has seq i+1)
		peak    int64
		fsyncs  int
		busy    time.Duration
		sizes   = map[string]int64{} // segment file: bytes at its last fsync
	)
	// The hook runs holding s.disk, without s.io (every fsync does): it
	// takes s.io, then s.mu, to read the spool's state.
	s.fsync = func(f *os.File) error {
		start := time.Now()
		inFsync.Store(true)
		time.Sleep(sd.delay)
		err := f.Sync()
		inFsync.Store(false)
		s.io.Lock()
		defer s.io.Unlock()
		s.mu.Lock()
		accepted := s.appended.Load() - s.droppedBuffer.Load() - s.droppedDisk.Load()
		s.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		peak = max(peak, int64(accepted-durable)*int64(slowLineBytes)) // before durable moves: the most not yet fsynced
		fsyncs++
		busy += time.Since(start)
		if err == nil && f == s.active {
			// The segment being written (the ones before it were
			// fsynced when it started).
			g := s.segs[len(s.segs)-1]
			durable, sizes[g.path] = g.last, g.size
		}
		return err
	}
	s.Start()

	total := int(sd.rate * sd.dur.Seconds())
	res := slowResult{kept: make([]bool, total)}
	// The shipper stops before the spool closes, as the agent's does.
	shipped := make(chan error, 1)
	ctx, stopShipping := context.WithCancel(context.Background())
	defer stopShipping()
	if sd.ship {
		r := s.NewReader()
		go func() {
			defer r.Close()
			for {
				e, err := r.Next(ctx)
				if ctx.Err() != nil {
					shipped <- nil
					return
				}
				if err == nil {
					err = pointsOf(e.Lines, func(i int) { res.shipped = append(res.shipped, i) })
				}
				if err == nil {
					err = s.Ack(Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}, 0)
				}
				if err != nil {
					shipped <- err
					return
				}
			}
		}()
	} else {
		shipped <- nil
	}

	recs := make([]record.Record, sd.batch)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for sent := 0; sent < total; {
		<-tick.C
		due := min(total, int(sd.rate*time.Since(start).Seconds()))
		for sent < due {
			n := min(sd.batch, due-sent)
			slowRecords(recs[:n], sent)
			t0 := time.Now()
			err := s.Append(recs[:n])
			res.maxAppend = max(res.maxAppend, time.Since(t0))
			s.mu.Lock()
			res.peakUnwritten = max(res.peakUnwritten, int64(len(s.buf))+s.unwritten.Load())
			s.mu.Unlock()
			if inFsync.Load() {
				res.duringFsync++
			}
			switch {
			case err == nil:
				for i := sent; i < sent+n; i++ {
					res.kept[i] = true
				}
			case errors.Is(err, ErrBufferFull):
				res.refused += n
			default:
				tb.Fatalf("append: %v", err)
			}
			sent += n
		}
	}
	res.elapsed = time.Since(start)
	stopShipping()
	if err := <-shipped; err != nil {
		tb.Fatalf("shipper: %v", err)
	}
	if err := s.Close(); err != nil {
		tb.Fatalf("close: %v", err)
	}
	res.stats = s.Stats()
	mu.Lock()
	res.peakUnsafe, res.fsyncs, res.fsyncBusy, res.segments = peak, fsyncs, busy, len(sizes)
	for _, n := range sizes {
		res.bytes += n
	}
	mu.Unlock()
	return res
}

// pointsOf calls fn with the number of each line of slowRecords in lines.
func pointsOf(lines []byte, fn func(int)) error {
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		line := lines[:i]
		lines = lines[i+1:]
		ts, err := strconv.ParseInt(string(line[bytes.LastIndexByte(line, ' ')+1:]), 10, 64)
		if err != nil {
			return fmt.Errorf("line %q: %w", line, err)
		}
		fn(int((ts - slowTimeBase) / 1000))
	}
	return nil
}

// readBack checks that the points shipped, then those the spool in dir holds
// after its acknowledged position (read with ReadDir), are the kept points,
// each once, in order, and nothing else.
func readBack(tb testing.TB, dir string, kept []bool, shipped []int) {
	tb.Helper()
	want := -1 // the next kept point
	advance := func() {
		for want++; want < len(kept) && !kept[want]; want++ {
		}
	}
	advance()
	var bad error
	check := func(got int) {
		if got != want && bad == nil {
			bad = fmt.Errorf("point %d where point %d was due (of %d)", got, want, len(kept))
		}
		advance()
	}
	for _, i := range shipped {
		check(i)
	}
	acked, err := readAck(filepath.Join(dir, "ack"))
	if err != nil {
		tb.Fatal(err)
	}
	_, err = ReadDir(dir, func(e Entry) error {
		seq := e.FirstSeq
		return pointsOf(e.Lines, func(i int) {
			if seq > acked {
				check(i)
			}
			seq++
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	if bad != nil {
		tb.Fatal(bad)
	}
	if want != len(kept) {
		tb.Fatalf("read back up to point %d of %d: the rest is missing", want, len(kept))
	}
}

// TestSlowFsyncLosesNothingThatFits: with every fsync taking 500 ms, points
// arriving at 2,000 a second (374 KB/s: a fifth of a 1 MiB buffer per fsync)
// are all kept and read back, in order, once; Append never waits for the
// disk. With a shipper acknowledging them, a flush fsyncs up to four files
// (segment, directory, ack file, directory): 2 MiB hold what arrives
// meanwhile. With a buffer smaller than what arrives during one fsync, points
// are refused, and every one of them is counted. Either way, the bytes
// accepted and not yet fsynced never exceed MaxBuffer (and one Append).
func TestSlowFsyncLosesNothingThatFits(t *testing.T) {
	const delay = 500 * time.Millisecond
	for _, tc := range []struct {
		name      string
		maxBuffer int
		compress  bool
		ship      bool
		keepAll   bool
	}{
		{"fits/plain", 1 << 20, false, false, true},
		{"fits/gzip", 1 << 20, true, false, true},
		{"fits/gzip/shipping", 2 << 20, true, true, true},
		{"outrun/plain", 128 << 10, false, false, false},
		{"outrun/gzip/shipping", 128 << 10, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sd := slowDisk{
				opts:  Options{MaxBuffer: tc.maxBuffer, Compress: tc.compress},
				delay: delay, rate: 2000, dur: 3 * time.Second, batch: 20, ship: tc.ship,
			}
			dir := t.TempDir()
			res := sd.run(t, dir)
			st := res.stats
			kept := 0
			for _, k := range res.kept {
				if k {
					kept++
				}
			}
			t.Logf("%d-byte lines at %.0f points/s for %v, MaxBuffer %d: kept %d (shipped %d), refused %d (dropped_buffer %d, dropped_disk %d); "+
				"%d slow fsyncs (%v in them); peak accepted but not fsynced %d bytes (counted against MaxBuffer %d); longest Append %v, %d Appends during an fsync",
				slowLineBytes, sd.rate, res.elapsed.Round(time.Millisecond), tc.maxBuffer, kept, len(res.shipped), res.refused, st.DroppedBuffer, st.DroppedDisk,
				res.fsyncs, res.fsyncBusy.Round(time.Millisecond), res.peakUnsafe, res.peakUnwritten, res.maxAppend, res.duringFsync)

			// Append takes only the producer's lock: Appends return while
			// fsyncs are in flight (some 50 an fsync at this rate), and
			// none takes long enough to have waited for one.
			if res.fsyncs < 3 || res.duringFsync < 10*res.fsyncs {
				t.Fatalf("%d slow fsyncs, %d Appends returned during them: Append waits for the disk, or the run did not exercise it",
					res.fsyncs, res.duringFsync)
			}
			if res.maxAppend >= delay/2 {
				t.Errorf("an Append took %v with %v fsyncs: it waited for the disk", res.maxAppend, delay)
			}
			// Every point handed over is kept or counted, nothing silent.
			if st.Appended != uint64(len(res.kept)) || st.DroppedBuffer != uint64(res.refused) || st.DroppedDisk != 0 ||
				st.Buffered != 0 || st.Acknowledged != uint64(len(res.shipped)) || st.Pending != uint64(kept-len(res.shipped)) {
				t.Errorf("offered %d, kept %d, refused %d; stats %+v", len(res.kept), kept, res.refused, st)
			}
			checkBalance(t, st)
			if tc.keepAll && res.refused != 0 {
				t.Errorf("refused %d points arriving at %d bytes/s with %v fsyncs and MaxBuffer %d",
					res.refused, int(sd.rate)*slowLineBytes, delay, tc.maxBuffer)
			}
			if !tc.keepAll && res.refused == 0 {
				t.Errorf("refused nothing: %d bytes/s with %v fsyncs fit in MaxBuffer %d?", int(sd.rate)*slowLineBytes, delay, tc.maxBuffer)
			}
			// MaxBuffer bounds what is not yet durable, with a slow fsync too
			// (the bytes as stored: with gzip the lines on disk take less).
			if limit := int64(tc.maxBuffer + sd.batch*slowLineBytes); !tc.compress && res.peakUnsafe > limit {
				t.Errorf("%d bytes accepted and not fsynced at once, beyond MaxBuffer %d and one Append (%d)",
					res.peakUnsafe, tc.maxBuffer, limit)
			}
			readBack(t, dir, res.kept, res.shipped)
		})
	}
}

// An fsync that takes long and then fails (a dying SD card): while it is in
// flight, Append must not fill a second MaxBuffer behind the half being
// fsynced, or the failure, which takes that half back into memory (takeBack),
// leaves more in memory than MaxBuffer and the heap beyond MemoryBytes.
func TestSlowFailingFsyncStaysWithinMaxBuffer(t *testing.T) {
	const maxBuf = 4 << 20
	o := Options{Dir: t.TempDir(), MaxBuffer: maxBuf, FlushBytes: 128 << 10, DeferFlush: true,
		FlushInterval: time.Hour, FsyncInterval: time.Hour, SegmentBytes: 64 << 20, MaxBytes: 1 << 40}
	var base, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	s := open(t, o)
	entered, release := make(chan struct{}), make(chan struct{})
	var calls int // the flusher's, under s.io
	s.fsync = func(f *os.File) error {
		if calls++; calls > 1 { // the directory's, after the failure
			return f.Sync()
		}
		close(entered)
		<-release
		return errInjected
	}
	recs := make([]record.Record, 100)
	var kept []bool // by point
	appendUntilFull := func() {
		for {
			slowRecords(recs, len(kept))
			full := errors.Is(s.Append(recs), ErrBufferFull)
			for range recs {
				kept = append(kept, !full)
			}
			if full {
				return
			}
		}
	}
	appendUntilFull() // MaxBuffer buffered
	synced := make(chan error)
	go func() { synced <- s.Sync() }() // writes it all, then its fsync hangs
	<-entered
	appendUntilFull() // while the fsync hangs
	close(release)
	if err := <-synced; !errors.Is(err, errInjected) {
		t.Fatalf("sync: %v", err)
	}
	s.io.Lock()
	s.mu.Lock()
	held := len(s.buf) + len(s.frame)
	s.mu.Unlock()
	s.io.Unlock()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap := int64(ms.HeapAlloc) - int64(base.HeapAlloc)
	t.Logf("after the failed fsync: %d bytes buffered and taken back (MaxBuffer %d), heap %d bytes (MemoryBytes %d)",
		held, maxBuf, heap, o.MemoryBytes())
	if held > maxBuf+len(recs)*slowLineBytes {
		t.Errorf("%d bytes buffered and taken back after a slow fsync failed: beyond MaxBuffer %d", held, maxBuf)
	}
	if heap > o.MemoryBytes() {
		t.Errorf("heap %d bytes after a slow fsync failed: beyond MemoryBytes %d", heap, o.MemoryBytes())
	}
	// Everything accepted is written again once fsync works, and read back.
	s.fsync = nil
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	checkBalance(t, st)
	if st.Appended != uint64(len(kept)) || st.Pending+st.DroppedBuffer != st.Appended || st.DroppedDisk != 0 {
		t.Fatalf("offered %d; stats %+v", len(kept), st)
	}
	readBack(t, o.Dir, kept, nil)
}

// While an fsync hangs (a slow card), the shipper's reader, its
// acknowledgements and Stats go on: only the flush waits for the disk.
// The fsync that hangs is a segment roll's in the middle of a flush, with
// points of the flush not yet written: Stats still balances.
func TestReaderAckAndStatsDoNotWaitForFsync(t *testing.T) {
	o := Options{Dir: t.TempDir(), DeferFlush: true, FlushInterval: time.Hour, FsyncInterval: time.Hour,
		FlushBytes: 4096, SegmentBytes: 16 << 10, MaxBytes: 1 << 40}
	s := open(t, o)
	defer s.Close()
	recs := make([]record.Record, 100)
	slowRecords(recs, 0)
	s.Append(recs)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	defer r.Close()
	entered, release := make(chan struct{}), make(chan struct{})
	var hung atomic.Bool
	s.fsync = func(f *os.File) error {
		if hung.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return f.Sync()
	}
	for i := 1; i <= 2; i++ { // 37,400 bytes: the segment rolls after 16 KiB of them
		slowRecords(recs, i*100)
		s.Append(recs)
	}
	synced := make(chan error, 1)
	go func() { synced <- s.Sync() }()
	<-entered
	done := make(chan string)
	go func() {
		st := s.Stats()
		if in, out := st.Appended, st.Pending+st.Buffered; in != out || st.Buffered == 0 {
			done <- fmt.Sprintf("during the fsync: appended %d, pending %d + buffered %d (want some still to write)", in, st.Pending, st.Buffered)
			return
		}
		var b Batch
		for {
			e, ok, err := r.TryNext()
			if err != nil {
				done <- err.Error()
				return
			}
			if !ok {
				break
			}
			if b.Points == 0 {
				b.FirstSeq = e.FirstSeq
			}
			b.LastSeq, b.Points = e.LastSeq(), b.Points+int(e.Points)
		}
		if err := s.Ack(b, 0); err != nil {
			done <- err.Error()
			return
		}
		done <- fmt.Sprintf("ok: read and acknowledged %d points", b.Points)
	}()
	waited := false
	select {
	case msg := <-done:
		t.Log(msg)
		if !strings.HasPrefix(msg, "ok") {
			t.Error(msg)
		}
	case <-time.After(2 * time.Second):
		t.Error("Stats, the reader or Ack waited for an fsync")
		waited = true
	}
	close(release)
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	if waited {
		<-done // it went on once the fsync returned
	}
	s.fsync = nil
	lines, b := drain(t, r)
	if err := s.Ack(b, 0); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	checkBalance(t, st)
	if st.Acknowledged != 300 || st.Pending != 0 || st.Buffered != 0 {
		t.Fatalf("after the fsync: read %d more lines; stats %+v", len(lines), st)
	}
}

// Acknowledgements that come while the directory or the ack file is being
// fsynced (io let go) are not forgotten: the segments they remove get the
// directory fsynced again, their position reaches the ack file.
func TestAcksDuringAnFsyncAreKept(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, DeferFlush: true, FlushInterval: time.Hour, FsyncInterval: time.Hour,
		FlushBytes: 4096, SegmentBytes: 4096, MaxBytes: 1 << 40})
	defer s.Close()
	recs := make([]record.Record, 200)
	slowRecords(recs, 0)
	s.Append(recs) // entries of 21 points, two a segment
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	defer r.Close()
	var entries []Batch
	for {
		e, ok, err := r.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		entries = append(entries, Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)})
	}
	if len(entries) < 10 {
		t.Fatalf("%d entries, want at least 10", len(entries))
	}
	// upTo is the batch of the points after the last acknowledged through
	// entry i.
	var acked uint64
	upTo := func(i int) Batch {
		b := Batch{FirstSeq: acked + 1, LastSeq: entries[i].LastSeq, Points: int(entries[i].LastSeq - acked)}
		acked = b.LastSeq
		return b
	}
	// hangOn makes the next fsync of the file named name hang, acknowledges
	// b meanwhile, and lets it go; it returns the fsyncs of name in a Sync
	// after that one.
	var hook struct {
		name           string
		calls          int
		entered, leave chan struct{}
	}
	s.fsync = func(f *os.File) error {
		if f.Name() == hook.name {
			hook.calls++
			if hook.leave != nil {
				close(hook.entered)
				<-hook.leave
				hook.leave = nil
			}
		}
		return f.Sync()
	}
	hangOn := func(name string, b Batch) int {
		t.Helper()
		hook.name, hook.calls = name, 0
		hook.entered, hook.leave = make(chan struct{}), make(chan struct{})
		entered, leave := hook.entered, hook.leave
		synced := make(chan error, 1)
		go func() { synced <- s.Sync() }()
		<-entered
		acked := make(chan error, 1)
		go func() { acked <- s.Ack(b, 0) }()
		select {
		case err := <-acked:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Ack waited for an fsync")
		}
		close(leave)
		if err := <-synced; err != nil {
			t.Fatal(err)
		}
		hook.calls = 0
		if err := s.Sync(); err != nil {
			t.Fatal(err)
		}
		return hook.calls
	}
	ackFile := func() uint64 {
		t.Helper()
		acked, err := readAck(filepath.Join(dir, "ack"))
		if err != nil {
			t.Fatal(err)
		}
		return acked
	}

	// The directory's fsync hangs (a segment removed by the first
	// acknowledgement); the second removes another meanwhile.
	if err := s.Ack(upTo(1), 0); err != nil {
		t.Fatal(err)
	}
	if n := hangOn(dir, upTo(3)); n == 0 {
		t.Error("a segment removed during the directory's fsync: the directory was not fsynced again")
	}
	if got := ackFile(); got != entries[3].LastSeq {
		t.Errorf("ack file at %d, want %d", got, entries[3].LastSeq)
	}
	// The ack file's fsync hangs; an acknowledgement comes meanwhile.
	if err := s.Ack(upTo(4), 0); err != nil {
		t.Fatal(err)
	}
	hangOn(filepath.Join(dir, "ack.tmp"), upTo(6))
	if got := ackFile(); got != entries[6].LastSeq {
		t.Errorf("ack file at %d after an acknowledgement during its fsync and a Sync, want %d", got, entries[6].LastSeq)
	}
	checkBalance(t, s.Stats())
	// Close's last fsync (the directory's, for the ack file) hangs; an
	// acknowledgement comes meanwhile: Close writes it.
	if err := s.Ack(upTo(7), 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil { // the directory is fsynced: Close fsyncs it for the ack file only
		t.Fatal(err)
	}
	if err := s.Ack(upTo(8), 0); err != nil {
		t.Fatal(err)
	}
	hook.name, hook.entered, hook.leave = dir, make(chan struct{}), make(chan struct{})
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	<-hook.entered
	if err := s.Ack(upTo(9), 0); err != nil {
		t.Fatal(err)
	}
	close(hook.leave)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if got := ackFile(); got != entries[9].LastSeq {
		t.Errorf("ack file at %d after an acknowledgement during Close, want %d", got, entries[9].LastSeq)
	}
	checkBalance(t, s.Stats())
}
