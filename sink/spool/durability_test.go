package spool

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 10 item 7: the ack file is fsynced on the fsync interval even when no
// new data arrives, not only at close.
func TestAckIsFsyncedOnItsInterval(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, FlushInterval: 5 * time.Millisecond, FsyncInterval: 20 * time.Millisecond})
	defer s.Close()
	s.Append(recs(0, 10))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	_, b := drain(t, r)
	time.Sleep(50 * time.Millisecond) // the data fsync is behind us
	before := s.Stats().Fsyncs
	if err := s.Ack(b, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().Fsyncs == before {
		if time.Now().After(deadline) {
			t.Fatalf("no fsync within 2 s of an ack (fsync interval 20 ms): %+v", s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	raw, err := os.ReadFile(s.ackPath())
	if err != nil || len(raw) != 12 || binary.LittleEndian.Uint64(raw) != b.LastSeq {
		t.Fatalf("ack file %x (%v), want position %d", raw, err, b.LastSeq)
	}
}

// Issue 10 item 5: a shipper that re-opens its reader after an error gets the
// points it was handed but never acknowledged again.
func TestNewReaderRereadsUnacknowledged(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	s.Append(recs(0, 10))
	s.Flush()
	s.Append(recs(10, 10))
	s.Flush()
	r := s.NewReader()
	if _, ok, err := r.TryNext(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	r.Close()
	lines, b := drain(t, s.NewReader())
	if len(lines) != 20 || b.FirstSeq != 1 {
		t.Fatalf("re-opened reader got %d lines from seq %d, want 20 from 1", len(lines), b.FirstSeq)
	}
}

// Issue 10 item 7: in-flight points whose segment the cap removed are counted
// as dropped when the shipper re-opens without acknowledging them.
func TestCapCountsInFlightPointsNeverAcknowledged(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), SegmentBytes: 4096, MaxBytes: 16384})
	defer s.Close()
	r := s.NewReader()
	s.Append(recs(0, 10))
	s.Flush()
	if _, ok, _ := r.TryNext(); !ok {
		t.Fatal("no first entry")
	}
	for i := 1; i < 400; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	r.Close() // the shipper failed before acknowledging its batch
	lines, _ := drain(t, s.NewReader())
	st := s.Stats()
	if uint64(len(lines))+st.DroppedCap != 4000 {
		t.Fatalf("delivered %d + dropped %d != appended 4000", len(lines), st.DroppedCap)
	}
}

// Issue 10 item 7: MaxBuffer bounds buffered and sealed-but-unwritten data
// together while the disk refuses writes.
func TestMaxBufferCoversSealedData(t *testing.T) {
	const maxBuf = 8192
	dir := filepath.Join(t.TempDir(), "spool")
	s := open(t, Options{Dir: dir, FlushInterval: time.Hour, FlushBytes: 1 << 30, MaxBuffer: maxBuf, SegmentBytes: 1})
	defer s.Close()
	// No segment can be created from now on: the directory is a file.
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var appended, refused, peak int
	for i := 0; i < 500; i++ {
		err := s.Append(recs(i*10, 10))
		switch {
		case errors.Is(err, ErrBufferFull):
			refused += 10
		case err == nil:
			appended += 10
		default:
			t.Fatal(err)
		}
		s.io.Lock()
		s.mu.Lock()
		peak = max(peak, len(s.buf)+len(s.frame))
		s.mu.Unlock()
		s.io.Unlock()
		if i%20 == 19 { // the flusher runs now and then; each write fails
			s.Flush()
		}
	}
	st := s.Stats()
	if refused == 0 || st.DroppedDisk != uint64(refused) || st.DroppedBuffer != 0 || st.Appended != uint64(appended+refused) || st.WriteErrors == 0 {
		t.Fatalf("refused %d, stats %+v", refused, st)
	}
	checkBalance(t, st)
	if peak > maxBuf+1024 { // at most one append beyond the cap
		t.Fatalf("%d bytes held in memory with MaxBuffer %d", peak, maxBuf)
	}
}

// Issue 10 item 7: an entry damaged on disk after open is skipped and counted
// by the reader instead of failing every read for good.
func TestReaderSkipsEntryCorruptedAfterOpen(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), SegmentBytes: 4096})
	defer s.Close()
	for i := 0; i < 100; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	s.io.Lock()
	first := s.segs[0]
	s.io.Unlock()
	flipByte(t, first.path, HeaderSize+10) // the first entry's payload
	r := s.NewReader()
	var got int
	for {
		e, ok, err := r.TryNext()
		if err != nil {
			t.Fatalf("reader: %v", err)
		}
		if !ok {
			break
		}
		got += strings.Count(string(e.Lines), "\n")
	}
	st := s.Stats()
	if st.DroppedCorrupt != first.points || uint64(got)+st.DroppedCorrupt != 1000 {
		t.Fatalf("read %d, dropped as corrupt %d (segment held %d), want 1000 in all", got, st.DroppedCorrupt, first.points)
	}
}

func TestSecondOpenOfADirIsRefused(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	s.Close()
	s2 := open(t, Options{Dir: dir}) // released by Close
	s2.Close()
}

func TestAppendLines(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	n, err := s.AppendLines([]byte("# 2026 rejected: x\na v=1i 1\n\nb v=2i 2"))
	if err != nil || n != 2 {
		t.Fatal(n, err)
	}
	s.Flush()
	lines, b := drain(t, s.NewReader())
	if strings.Join(lines, "|") != "a v=1i 1|b v=2i 2" || b.Points != 2 || s.Stats().Appended != 2 {
		t.Fatalf("lines %q batch %+v", lines, b)
	}
}

// Damage in the segment being written costs the entries it holds, not the
// ones appended after it was found.
func TestCorruptActiveSegmentDoesNotSwallowLaterEntries(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), SegmentBytes: 1 << 20})
	defer s.Close()
	for i := 0; i < 10; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	s.io.Lock()
	active := s.segs[len(s.segs)-1]
	s.io.Unlock()
	flipByte(t, active.path, HeaderSize+10)
	r := s.NewReader()
	read := func() (n int) {
		for {
			e, ok, err := r.TryNext()
			if err != nil {
				t.Fatalf("reader: %v", err)
			}
			if !ok {
				return n
			}
			n += strings.Count(string(e.Lines), "\n")
		}
	}
	if got := read(); got != 0 || s.Stats().DroppedCorrupt != 100 {
		t.Fatalf("read %d, dropped %d of the damaged segment's 100", got, s.Stats().DroppedCorrupt)
	}
	for i := 10; i < 20; i++ { // appended after the damage was found
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	if got := read(); got != 100 || s.Stats().DroppedCorrupt != 100 {
		t.Fatalf("read %d of the 100 points appended after the damage; dropped %d", got, s.Stats().DroppedCorrupt)
	}
}

// A failure of the background flush (here the ack file's directory vanished)
// is reported in Stats until a flush succeeds again; the acknowledgement is
// written then.
func TestBackgroundFlushFailureIsReported(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	s := open(t, Options{Dir: dir, FlushInterval: 5 * time.Millisecond, FsyncInterval: 5 * time.Millisecond})
	defer s.Close()
	s.Append(recs(0, 10))
	s.Flush()
	r := s.NewReader()
	e, ok, err := r.TryNext()
	if err != nil || !ok {
		t.Fatalf("read: %v %v", ok, err)
	}
	moved := dir + ".away"
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := s.Ack(Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}, 0); err != nil {
		t.Fatal(err)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s: %+v", what, s.Stats())
			}
		}
	}
	waitFor("reported failure", func() bool { return strings.Contains(s.Stats().LastError, "spool ack") })
	if err := os.Rename(moved, dir); err != nil {
		t.Fatal(err)
	}
	waitFor("recovery", func() bool { return s.Stats().LastError == "" })
	// The ack is retried on the fsync interval after its failure.
	waitFor("ack file", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "ack"))
		return err == nil && len(b) >= 8 && binary.LittleEndian.Uint64(b) == e.LastSeq()
	})
}

// A spool opened with DeferFlush writes nothing in the background until
// Start, and Close without Start still writes everything accepted.
func TestDeferFlushStartsOnStart(t *testing.T) {
	for _, start := range []bool{false, true} {
		dir := t.TempDir()
		s := open(t, Options{Dir: dir, FlushInterval: time.Millisecond, DeferFlush: true})
		s.Append(recs(0, 10))
		time.Sleep(20 * time.Millisecond)
		if st := s.Stats(); st.Bytes != 0 {
			t.Fatalf("%d bytes on disk before Start", st.Bytes)
		}
		if start {
			s.Start()
			for deadline := time.Now().Add(2 * time.Second); s.Stats().Bytes == 0; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("Start did not start the background flush")
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open(t, Options{Dir: dir})
		if st := s.Stats(); st.Recovered != 10 {
			t.Fatalf("start %v: %d points recovered, want 10", start, st.Recovered)
		}
		s.Close()
	}
}
