package spool

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

var errInjected = errors.New("injected fsync failure")

func failFsync(*os.File) error { return errInjected }

// Issue 20 item 1: a failed fsync is not ignored. The entries written since
// the last good fsync are taken back into memory, cut from the segment, and
// written again to a new one once fsync works; the reader hands none of them
// out twice.
func TestFailedFsyncTakesEntriesBack(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, DeferFlush: true, FlushInterval: time.Hour, FsyncInterval: time.Hour}
	s := open(t, o)
	s.Append(recs(0, 10))
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.io.Lock()
	first := s.segs[0]
	syncedSize := first.size
	s.io.Unlock()
	s.Append(recs(10, 10))
	if err := s.Flush(); err != nil { // written, not fsynced
		t.Fatal(err)
	}
	r := s.NewReader()
	lines, b := drain(t, r) // the shipper has all 20 in hand
	if len(lines) != 20 {
		t.Fatalf("read %d lines before the failure", len(lines))
	}
	s.fsync = failFsync
	before := s.Stats().WriteErrors
	err := s.Sync()
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "fsync") {
		t.Fatalf("sync with a failing fsync: %v", err)
	}
	st := s.Stats()
	if st.WriteErrors == before || st.Buffered != 10 || st.Pending != 10 {
		t.Fatalf("after the failed fsync: %+v (want the 10 points not fsynced back in memory)", st)
	}
	checkBalance(t, st)
	if fi, err := os.Stat(first.path); err != nil || fi.Size() != syncedSize {
		t.Fatalf("segment after the failed fsync: %v, %d bytes; want %d (what was fsynced)", err, fi.Size(), syncedSize)
	}
	// The shipper acknowledges what it holds, 10 of them still in memory.
	if err := s.Ack(b, 0); err != nil {
		t.Fatal(err)
	}
	checkBalance(t, s.Stats())
	s.fsync = nil
	if err := s.Sync(); err != nil {
		t.Fatalf("sync once fsync works: %v", err)
	}
	if st := s.Stats(); st.Buffered != 0 || st.Pending != 0 || st.Acknowledged != 20 || st.Segments != 1 {
		t.Fatalf("after writing them again: %+v", st)
	}
	if again, _ := drain(t, r); len(again) != 0 {
		t.Fatalf("the reader handed out %d points twice", len(again))
	}
	checkBalance(t, s.Stats())
	s.Append(recs(20, 5))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, o)
	defer s.Close()
	lines, _ = drain(t, s.NewReader())
	if len(lines) != 5 || !strings.Contains(lines[0], "i=20i") {
		t.Fatalf("after reopening, %d lines from %q; want the 5 unacknowledged", len(lines), lines)
	}
}

// Issue 20 items 1 and 2: while fsync keeps failing, points wait in memory up
// to MaxBuffer, beyond it they are dropped as DroppedDisk, and Close counts
// what it could not make durable. Nothing not fsynced is left behind as if it
// were on disk.
func TestFsyncFailingUntilCloseIsCounted(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, DeferFlush: true, FlushInterval: time.Hour, FsyncInterval: time.Nanosecond, MaxBuffer: 4096}
	s := open(t, o)
	s.Append(recs(0, 10))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s.fsync = failFsync
	offered := 10
	for i := 0; i < 50; i++ {
		s.Append(recs(offered, 10))
		offered += 10
		if err := s.Flush(); !errors.Is(err, errInjected) {
			t.Fatalf("flush %d with a failing fsync: %v", i, err)
		}
	}
	st := s.Stats()
	if st.DroppedDisk == 0 || st.DroppedBuffer != 0 || st.Pending != 10 {
		t.Fatalf("while fsync fails: %+v", st)
	}
	checkBalance(t, st)
	if err := s.Close(); err == nil {
		t.Fatal("Close with a failing fsync reported nothing")
	}
	st = s.Stats()
	checkBalance(t, st)
	if st.Buffered != 0 || st.Pending != 10 {
		t.Fatalf("after Close: %+v", st)
	}
	s = open(t, o)
	defer s.Close()
	lines, _ := drain(t, s.NewReader())
	if uint64(len(lines)) != st.Pending || uint64(offered) != st.Pending+st.DroppedDisk {
		t.Fatalf("offered %d, recovered %d lines, counted %d dropped", offered, len(lines), st.DroppedDisk)
	}
}

// A failed fsync whose entries do not read back intact leaves them where
// they are: the reader counts them as corrupt, nothing is lost uncounted.
func TestFailedFsyncWithDamagedEntriesLeavesThemToTheReader(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), DeferFlush: true, FlushInterval: time.Hour, FsyncInterval: time.Hour})
	defer s.Close()
	s.Append(recs(0, 10))
	s.Sync()
	s.Append(recs(10, 10))
	s.Flush()
	s.io.Lock()
	g := s.segs[0]
	flipByte(t, g.path, g.synced+HeaderSize+3) // the page cache lost it
	s.io.Unlock()
	s.fsync = failFsync
	if err := s.Sync(); !errors.Is(err, errInjected) {
		t.Fatal(err)
	}
	s.fsync = nil
	lines, _ := drain(t, s.NewReader())
	st := s.Stats()
	if len(lines) != 10 || st.DroppedCorrupt != 10 || st.Buffered != 0 {
		t.Fatalf("read %d lines, stats %+v", len(lines), st)
	}
	checkBalance(t, st)
}
