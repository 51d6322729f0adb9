package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/monagent/monagent/sink/spool/spooltest"
)

// Issue 20 item 13: opening and closing a spool without appending leaves its
// directory as it was: no empty segment is created or touched.
func TestOpenCloseWithoutAppendsChangesNothing(t *testing.T) {
	for _, name := range []string{"new", "with data"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := open(t, Options{Dir: dir})
			if name == "with data" {
				s.Append(recs(0, 10))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			before := spooltest.Files(t, dir)
			if name == "new" && len(before) != 1 {
				t.Fatalf("a spool opened and closed holds %v, want only its lock file", before)
			}
			s = open(t, Options{Dir: dir})
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if after := spooltest.Files(t, dir); !reflect.DeepEqual(before, after) {
				t.Fatalf("open and close changed the directory:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

// Issue 20 item 16: open reads segments entry by entry through a bounded
// buffer; a 64 MiB segment does not cost 64 MiB of memory at every start.
func TestOpenScansSegmentsInBoundedMemory(t *testing.T) {
	const entry = 256 << 10
	const segBytes = 64 << 20
	dir := t.TempDir()
	payload := make([]byte, entry-HeaderSize)
	for i := range payload {
		payload[i] = byte('a' + i%26)
	}
	var b []byte
	var points uint64
	for seq := uint64(1); len(b)+entry <= segBytes; seq += 1000 {
		b = AppendEntry(b, Header{FirstSeq: seq, Points: 1000}, payload)
		points += 1000
	}
	if err := os.WriteFile(filepath.Join(dir, segName(1)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	size := len(b)
	b = nil
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := open(t, Options{Dir: dir, SegmentBytes: 2 * segBytes, MaxBytes: 1 << 40, DeferFlush: true})
	runtime.ReadMemStats(&after)
	defer s.Close()
	if st := s.Stats(); st.Recovered != points {
		t.Fatalf("recovered %d points of %d", st.Recovered, points)
	}
	t.Logf("opening a spool with a %d-byte segment allocated %d bytes", size, after.TotalAlloc-before.TotalAlloc)
	// One entry's buffer and a few small things, not the segment.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*entry {
		t.Fatalf("opening a spool with a %d-byte segment allocated %d bytes (entries of %d)", size, alloc, entry)
	}
}

// Issue 20 item 16: MemoryBytes bounds what the spool holds: with the disk
// refusing writes until MaxBuffer is reached, and reading everything back
// once it takes them again.
func TestMemoryBytesBoundsTheHeap(t *testing.T) {
	for _, compress := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "spool")
		o := Options{Dir: dir, MaxBuffer: 2 << 20, FlushBytes: 128 << 10, Compress: compress,
			SegmentBytes: 1, MaxBytes: 1 << 40, DeferFlush: true, FlushInterval: time.Hour}
		batch := recs(0, 100)
		held := heapWithin(t, o, fmt.Sprintf("compress %v", compress))
		s := open(t, o)
		os.Rename(dir, dir+".away") // no segment can be created: the directory is a file
		os.WriteFile(dir, nil, 0o644)
		for i := 0; ; i++ {
			if errors.Is(s.Append(batch), ErrBufferFull) {
				break
			}
			if i%10 == 9 {
				s.Flush()
			}
		}
		s.Flush()
		held("disk refusing, MaxBuffer reached")
		os.Remove(dir)
		os.Rename(dir+".away", dir)
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		r := s.NewReader()
		lines, _ := drain(t, r)
		held("all read back")
		if st := s.Stats(); uint64(len(lines)) != st.Appended-st.DroppedDisk {
			t.Fatalf("read %d lines, stats %+v", len(lines), st)
		}
		r.Close()
		s.Close()
	}
}

// heapWithin returns a check that the heap grown since the call (after a
// GC) is within o.MemoryBytes(), naming what and when; it returns the bytes.
func heapWithin(t *testing.T, o Options, what string) func(when string) int64 {
	var base, ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&base)
	return func(when string) int64 {
		t.Helper()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		n := int64(ms.HeapAlloc) - int64(base.HeapAlloc)
		t.Logf("%s, %s: %d bytes held, MemoryBytes %d", what, when, n, o.MemoryBytes())
		if n > o.MemoryBytes() {
			t.Fatalf("%s, %s: %d bytes held, more than MemoryBytes %d", what, when, n, o.MemoryBytes())
		}
		return n
	}
}
