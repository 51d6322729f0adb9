package spool

import (
	"os"
	"testing"
	"time"
)

// flipByte damages the byte at off of the file at path.
func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var one [1]byte
	if _, err := f.ReadAt(one[:], off); err != nil {
		t.Fatal(err)
	}
	one[0] ^= 0xff
	if _, err := f.WriteAt(one[:], off); err != nil {
		t.Fatal(err)
	}
}

// dropped is every dropped counter.
func dropped(st Stats) uint64 {
	return st.DroppedCap + st.DroppedBuffer + st.DroppedCorrupt + st.DroppedDisk
}

// checkBalance checks that every point appended or recovered is accounted
// for, exactly, in one of the counters.
func checkBalance(t *testing.T, st Stats) {
	t.Helper()
	in := st.Appended + st.Recovered
	out := st.Acknowledged + st.DeadLettered + st.Pending + st.Buffered + dropped(st)
	if in != out {
		t.Fatalf("appended %d + recovered %d != acknowledged %d + dead-lettered %d + pending %d + buffered %d + dropped %d (cap %d, buffer %d, corrupt %d, disk %d)",
			st.Appended, st.Recovered, st.Acknowledged, st.DeadLettered, st.Pending, st.Buffered, dropped(st),
			st.DroppedCap, st.DroppedBuffer, st.DroppedCorrupt, st.DroppedDisk)
	}
}

// Issue 20 item 2: the counters balance at every step of a spool's life:
// appends, flushes, a reader with points in flight, acknowledgements, the
// cap removing segments under the reader, damage found on read-back, a
// re-opened reader, Close, and the next open.
func TestStatsBalanceAtEveryStep(t *testing.T) {
	dir := t.TempDir()
	o := Options{Dir: dir, SegmentBytes: 4096, MaxBytes: 16384, DeferFlush: true, FlushInterval: time.Hour}
	s := open(t, o)
	r := s.NewReader()
	var inFlight []Batch
	damaged := false
	for i := 0; i < 300; i++ {
		s.Append(recs(i*10, 10))
		checkBalance(t, s.Stats()) // buffered
		if err := s.Flush(); err != nil {
			t.Fatal(err)
		}
		checkBalance(t, s.Stats())
		if i%3 == 0 { // the shipper takes an entry and holds it
			e, ok, err := r.TryNext()
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				inFlight = append(inFlight, Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)})
			}
		}
		if i%17 == 16 && len(inFlight) > 0 { // and acknowledges what it holds, some dead-lettered
			last := inFlight[len(inFlight)-1]
			var pts int
			for _, b := range inFlight {
				pts += b.Points
			}
			if err := s.Ack(Batch{FirstSeq: inFlight[0].FirstSeq, LastSeq: last.LastSeq, Points: pts}, 1); err != nil {
				t.Fatal(err)
			}
			inFlight = inFlight[:0]
		}
		if i == 150 && !damaged { // damage the newest segment's first entry
			s.io.Lock()
			g := s.segs[len(s.segs)-1]
			s.io.Unlock()
			flipByte(t, g.path, HeaderSize+2)
			damaged = true
		}
		if i == 200 { // the shipper fails and starts over
			r.Close()
			r = s.NewReader()
			inFlight = inFlight[:0]
		}
		checkBalance(t, s.Stats())
	}
	st := s.Stats()
	if st.DroppedCap == 0 || st.DroppedCorrupt == 0 || st.Acknowledged == 0 || st.DeadLettered == 0 {
		t.Fatalf("the test did not exercise every path: %+v", st)
	}
	r.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkBalance(t, s.Stats())
	pending := s.Stats().Pending
	s = open(t, o)
	defer s.Close()
	if st := s.Stats(); st.Recovered != pending {
		t.Fatalf("recovered %d, %d were pending at Close", st.Recovered, pending)
	}
	checkBalance(t, s.Stats())
}
