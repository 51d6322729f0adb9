package spool

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

func rec(i int) record.Record {
	return record.Record{Measurement: "m", Tags: []record.Tag{{Key: "host", Value: "h"}}, Fields: []record.Field{record.Int("i", int64(i))}, TimeNS: int64(1e18) + int64(i)}
}

func recs(from, n int) []record.Record {
	out := make([]record.Record, n)
	for i := range out {
		out[i] = rec(from + i)
	}
	return out
}

func open(t *testing.T, o Options) *Spool {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain reads every entry available now and returns the lines.
func drain(t *testing.T, r *Reader) (lines []string, last Batch) {
	t.Helper()
	for {
		e, ok, err := r.TryNext()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return lines, last
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(e.Lines), "\n"), "\n") {
			lines = append(lines, l)
		}
		if last.Points == 0 {
			last.FirstSeq = e.FirstSeq
		}
		last.LastSeq = e.LastSeq()
		last.Points += int(e.Points)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprint("gzip=", compress), func(t *testing.T) {
			s := open(t, Options{Dir: t.TempDir(), Compress: compress})
			defer s.Close()
			for i := 0; i < 10; i++ {
				if err := s.Append(recs(i*100, 100)); err != nil {
					t.Fatal(err)
				}
				if i%3 == 0 {
					s.Flush()
				}
			}
			s.Flush()
			lines, b := drain(t, s.NewReader())
			if len(lines) != 1000 || b.FirstSeq != 1 || b.LastSeq != 1000 || b.Points != 1000 {
				t.Fatalf("read %d lines, batch %+v", len(lines), b)
			}
			for i, l := range lines {
				if want := fmt.Sprintf("m,host=h i=%di %d", i, int64(1e18)+int64(i)); l != want {
					t.Fatalf("line %d = %q, want %q", i, l, want)
				}
			}
			if st := s.Stats(); st.Appended != 1000 || st.Pending != 1000 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func TestReaderWaitsForData(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: 10 * time.Millisecond})
	defer s.Close()
	r := s.NewReader()
	got := make(chan Entry, 1)
	go func() {
		e, err := r.Next(context.Background())
		if err == nil {
			got <- e
		}
	}()
	time.Sleep(30 * time.Millisecond)
	s.Append(recs(0, 3))
	select {
	case e := <-got:
		if e.Points != 3 {
			t.Fatalf("entry %+v", e.Header)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("reader did not wake up for new data")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := r.Next(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next on an empty spool: %v", err)
	}
}

func TestReopenReplaysUnacknowledged(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, SegmentBytes: 2048})
	for i := 0; i < 50; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	r := s.NewReader()
	var acked Batch
	for i := 0; i < 20; i++ { // deliver and acknowledge the first 20 entries
		e, ok, err := r.TryNext()
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		acked = Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}
		if err := s.Ack(acked, 0); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = open(t, Options{Dir: dir, SegmentBytes: 2048})
	defer s.Close()
	st := s.Stats()
	if st.Recovered != 300 || st.Pending != 300 || st.TruncatedBytes != 0 {
		t.Fatalf("after reopen %+v", st)
	}
	for _, seg := range s.segs {
		if seg.points > 0 && seg.last <= 200 {
			t.Fatalf("segment %s holds only acknowledged points (through %d)", seg.path, seg.last)
		}
	}
	lines, b := drain(t, s.NewReader())
	if len(lines) != 300 || b.FirstSeq != 201 || !strings.Contains(lines[0], "i=200i") {
		t.Fatalf("replayed %d lines from seq %d: %q", len(lines), b.FirstSeq, lines[0])
	}
	// New points continue the sequence.
	s.Append(recs(500, 1))
	s.Flush()
	_, b = drain(t, s.NewReader())
	if b.LastSeq != 501 {
		t.Fatalf("sequence after reopen ends at %d, want 501", b.LastSeq)
	}
}

func segFiles(t *testing.T, dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	return m
}

func TestTornTailIsCutAndTheRestReplays(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	for i := 0; i < 5; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	s.Close()
	files := segFiles(t, dir)
	seg := files[len(files)-1]
	st, _ := os.Stat(seg)
	// A torn write: half an entry at the end.
	f, _ := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	frame := AppendEntry(nil, Header{FirstSeq: 51, Points: 10}, bytes.Repeat([]byte("x"), 100))
	f.Write(frame[:60])
	f.Close()
	s = open(t, Options{Dir: dir})
	defer s.Close()
	if got := s.Stats().TruncatedBytes; got != 60 {
		t.Fatalf("truncated %d bytes, want 60", got)
	}
	if st2, _ := os.Stat(seg); st2.Size() != st.Size() {
		t.Fatalf("segment is %d bytes after recovery, was %d before the torn write", st2.Size(), st.Size())
	}
	lines, _ := drain(t, s.NewReader())
	if len(lines) != 50 {
		t.Fatalf("replayed %d lines, want 50", len(lines))
	}
}

func TestCorruptEntryCutsItsSegmentOnly(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, SegmentBytes: 1})
	for i := 0; i < 4; i++ { // one entry per segment
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	s.Close()
	files := segFiles(t, dir)
	// Flip a payload byte of the second segment's entry.
	b, _ := os.ReadFile(files[1])
	b[HeaderSize+3] ^= 0xff
	os.WriteFile(files[1], b, 0o644)
	s = open(t, Options{Dir: dir, SegmentBytes: 1})
	defer s.Close()
	lines, _ := drain(t, s.NewReader())
	if len(lines) != 30 || !strings.Contains(lines[10], "i=20i") {
		t.Fatalf("replayed %d lines; want the 30 outside the corrupt entry", len(lines))
	}
	if s.Stats().TruncatedBytes != uint64(len(b)) {
		t.Fatalf("truncated %d, want %d", s.Stats().TruncatedBytes, len(b))
	}
}

func TestCapDropsWholeOldestSegmentsAndCountsExactly(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir, SegmentBytes: 4096, MaxBytes: 16384})
	defer s.Close()
	r := s.NewReader()
	// Hand the first entry to the "shipper" and keep it in flight.
	s.Append(recs(0, 10))
	s.Flush()
	inflight, ok, _ := r.TryNext()
	if !ok {
		t.Fatal("no first entry")
	}
	for i := 1; i < 400; i++ {
		s.Append(recs(i*10, 10))
		s.Flush()
	}
	st := s.Stats()
	if st.Bytes > 16384+4096+1024 {
		t.Fatalf("spool holds %d bytes over a 16384 cap", st.Bytes)
	}
	// The in-flight entry is delivered and acknowledged.
	s.Ack(Batch{FirstSeq: inflight.FirstSeq, LastSeq: inflight.LastSeq(), Points: int(inflight.Points)}, 0)
	lines, _ := drain(t, r)
	st = s.Stats()
	if st.DroppedCap == 0 {
		t.Fatal("nothing dropped")
	}
	delivered := uint64(10 + len(lines))
	if delivered+st.DroppedCap != 4000 {
		t.Fatalf("delivered %d + dropped %d != appended 4000", delivered, st.DroppedCap)
	}
	// What is left is the newest data, in order, without gaps.
	if !strings.Contains(lines[len(lines)-1], "i=3999i") {
		t.Fatalf("last line %q", lines[len(lines)-1])
	}
}

func TestAppendNeverWaitsAndCountsOverflow(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour, FlushBytes: 1 << 30, MaxBuffer: 4096})
	defer s.Close()
	var full int
	for i := 0; i < 1000; i++ {
		if err := s.Append(recs(i, 1)); errors.Is(err, ErrBufferFull) {
			full++
		}
	}
	st := s.Stats()
	if full == 0 || st.DroppedBuffer != uint64(full) || st.DroppedDisk != 0 || st.Appended != 1000 {
		t.Fatalf("full %d, stats %+v", full, st)
	}
	checkBalance(t, st)
}

func TestAppendDoesNotAllocate(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: time.Hour, FlushBytes: 1 << 30, MaxBuffer: 1 << 30})
	defer s.Close()
	batch := recs(0, 100)
	s.Append(batch)
	s.Flush()
	s.Append(batch) // both halves of the double buffer have grown
	s.Flush()
	if a := testing.AllocsPerRun(100, func() {
		s.Append(batch)
		s.mu.Lock() // keep the buffer from growing without bound
		s.buf = s.buf[:0]
		s.bufPoints = 0
		s.mu.Unlock()
	}); a != 0 {
		t.Fatalf("Append allocates %v times per 100 points", a)
	}
}

func TestRejectedRecordsAreCountedNotStored(t *testing.T) {
	s := open(t, Options{Dir: t.TempDir()})
	defer s.Close()
	bad := record.Record{Measurement: "m"} // no fields
	err := s.Append([]record.Record{rec(1), bad, rec(2)})
	if err == nil {
		t.Fatal("no error for a record without fields")
	}
	s.Flush()
	lines, _ := drain(t, s.NewReader())
	if len(lines) != 2 || s.Stats().Rejected != 1 {
		t.Fatalf("lines %d, stats %+v", len(lines), s.Stats())
	}
}

// goldenEntry is an entry of 2 points starting at seq 7, uncompressed.
// The CRC32C (0x559ab976) was computed with an independent bitwise
// implementation of the Castagnoli polynomial, not with this package.
const goldenEntry = "12000000" + "76b99a55" + "0700000000000000" + "02000000" + "00000000" +
	"6d20693d316920310a6d20693d326920320a"

func TestGoldenEntry(t *testing.T) {
	payload := []byte("m i=1i 1\nm i=2i 2\n")
	got := AppendEntry(nil, Header{FirstSeq: 7, Points: 2}, payload)
	want, _ := hex.DecodeString(goldenEntry)
	if !bytes.Equal(got, want) {
		t.Fatalf("entry bytes\n got %x\nwant %x", got, want)
	}
	h, p, n, err := DecodeEntry(want)
	if err != nil || n != len(want) || h.FirstSeq != 7 || h.Points != 2 || h.LastSeq() != 8 || !bytes.Equal(p, payload) {
		t.Fatalf("decode: %+v %q %d %v", h, p, n, err)
	}
	for i := 0; i < len(want); i++ {
		if _, _, _, err := DecodeEntry(want[:i]); !errors.Is(err, ErrShort) && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("prefix of %d bytes: %v", i, err)
		}
	}
}
