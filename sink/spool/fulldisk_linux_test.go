package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Issue 33 item 8: the spool recovers from a full disk by itself, in every
// order of events. A spool on a real tmpfs, its shipper stopped (an outage:
// nothing is read or acknowledged); the disk fills, with the spool's own
// backlog or another file; then the space comes back (the shipper drains the
// backlog, or the other file is deleted) and every point appended from then
// on must be written and delivered without a restart. Before the fix, a
// backlog in memory larger than the free space was retried whole at every
// flush and never fitted: every point after the space came back was dropped.

// fullDiskCase is one size of the sequence.
type fullDiskCase struct {
	name     string
	tmpfs    int64 // bytes
	segment  int64
	buffer   int // MaxBuffer
	compress bool
}

var fullDiskSizes = []fullDiskCase{
	{name: "tmpfs_smaller_than_a_segment", tmpfs: 64 << 10, segment: 256 << 10, buffer: 256 << 10},
	{name: "tmpfs_of_a_few_segments", tmpfs: 256 << 10, segment: 64 << 10, buffer: 1 << 20},
	{name: "buffer_smaller_than_the_tmpfs", tmpfs: 512 << 10, segment: 64 << 10, buffer: 128 << 10},
	{name: "compressed", tmpfs: 128 << 10, segment: 32 << 10, buffer: 512 << 10, compress: true},
}

// The orders of events.
const (
	orderDrain         = "outage_fills_disk_then_drain"        // the backlog fills the disk and the buffer; the outage ends; draining frees it
	orderEarly         = "outage_ends_before_buffer_fills"     // the outage ends once the disk is full and the buffer holds more than the disk: nothing dropped
	orderDeleteOutage  = "file_deleted_during_outage"          // another file fills the disk; the buffer fills; the file goes while the outage lasts; then it ends
	orderDeleteShipped = "file_deleted_after_outage"           // another file fills the disk; the buffer fills; the outage ends (nothing to drain); then the file goes
	orderFillerStays   = "file_takes_half_then_backlog_drains" // another file takes half the disk for good; the backlog fills the rest; the outage ends
)

func TestFullDiskSequences(t *testing.T) {
	for _, order := range []string{orderDrain, orderEarly, orderDeleteOutage, orderDeleteShipped, orderFillerStays} {
		for _, c := range fullDiskSizes {
			t.Run(order+"/"+c.name, func(t *testing.T) { runFullDisk(t, order, c) })
		}
	}
}

// fullDiskRound is the points appended per flush: about 2 KiB of lines.
const fullDiskRound = 50

func runFullDisk(t *testing.T, order string, c fullDiskCase) {
	mnt := mountTmpfs(t, fmt.Sprintf("size=%d", c.tmpfs))
	h := newFaultHarness(t, Options{Dir: filepath.Join(mnt, "spool"), SegmentBytes: c.segment, MaxBytes: 1 << 30,
		MaxBuffer: c.buffer, Compress: c.compress})
	defer func() {
		if h.s != nil {
			h.s.Close()
		}
	}()
	if err := h.round(fullDiskRound); err != nil {
		t.Fatalf("flush before the fault: %v", err)
	}
	h.drain()
	room := c.tmpfs // what the spool may use once the space is back
	var filler func()
	switch order {
	case orderDeleteOutage, orderDeleteShipped:
		filler = fillFS(t, mnt)
	case orderFillerStays:
		room = c.tmpfs / 2
		if err := os.WriteFile(filepath.Join(mnt, "filler"), make([]byte, room), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Rounds in one phase: enough to fill the buffer, or the disk, 4 times over.
	bound := 4*int(max(int64(c.buffer), c.tmpfs)/(fullDiskRound*8)) + 100

	// The outage: nothing is read, the disk fills.
	full := false
	for i := 0; !full; i++ {
		if i == bound {
			t.Fatalf("the disk never filled in %d rounds: %+v", bound, h.s.Stats())
		}
		full = errors.Is(h.round(fullDiskRound), unix.ENOSPC)
	}
	if order == orderEarly {
		// Until the backlog in memory is larger than the disk can ever
		// hold at once (or half the buffer), short of dropping.
		want := min(int64(c.buffer)/2, c.tmpfs+c.tmpfs/4)
		for i := 0; h.s.unwritten.Load() < want; i++ {
			if i == bound {
				t.Fatalf("the backlog in memory did not reach %d bytes in %d rounds: %+v", want, bound, h.s.Stats())
			}
			h.round(fullDiskRound)
		}
		if st := h.s.Stats(); dropped(st) != 0 {
			t.Fatalf("dropped before the buffer filled: %+v", st)
		}
	} else {
		for i := 0; h.s.Stats().DroppedDisk == 0; i++ {
			if i == bound {
				t.Fatalf("the buffer never filled in %d rounds: %+v", bound, h.s.Stats())
			}
			h.round(fullDiskRound)
		}
	}
	t.Logf("full: %+v", h.s.Stats())

	switch order {
	case orderDeleteOutage:
		filler()
		for range 10 { // the backlog goes to disk as far as it fits; the outage lasts
			h.round(fullDiskRound)
		}
	case orderDeleteShipped:
		for range 10 { // the shipper is back but the disk holds nothing to ship
			err := h.round(fullDiskRound)
			h.drain()
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatalf("the disk is still full, yet a flush returned %v: %+v", err, h.s.Stats())
			}
		}
		filler()
	}

	// The space is back and the shipper drains: the spool must recover.
	rounds, recovered := 0, false
	for !recovered {
		if rounds == bound {
			t.Fatalf("no recovery in %d rounds after the space came back (the whole backlog in memory is %d bytes, the disk %d): %+v",
				bound, h.s.unwritten.Load(), room, h.s.Stats())
		}
		err := h.round(fullDiskRound)
		h.drain()
		rounds++
		recovered = err == nil && h.s.Stats().Buffered == 0
	}
	atRecovery := h.s.Stats()
	if order == orderEarly && dropped(atRecovery) != 0 {
		t.Fatalf("the outage ended before the buffer filled, yet points were dropped: %+v", atRecovery)
	}

	// From now on every point is written and delivered, while the disk is
	// filled and freed again several times over.
	first := h.next
	after := 3*int(room)/(fullDiskRound*40) + 20
	for i := range after {
		if err := h.round(fullDiskRound); err != nil {
			t.Fatalf("round %d of %d after recovery: %v (%+v)", i, after, err, h.s.Stats())
		}
		h.drain()
	}
	st := h.s.Stats()
	if dropped(st) != dropped(atRecovery) {
		t.Fatalf("dropped %d points after recovery: %+v", dropped(st)-dropped(atRecovery), st)
	}
	for i := first; i < h.next; i++ {
		if h.delivered[i] == 0 {
			t.Fatalf("point %d, appended after recovery, was not delivered: %+v", i, st)
		}
	}
	checkBalance(t, st)
	t.Logf("%s: %d points dropped while full (disk %d, buffer %d), recovered %d rounds (%d points) after the space came back; %d points after it, all written and delivered; %d write errors in all",
		order, dropped(atRecovery), atRecovery.DroppedDisk, atRecovery.DroppedBuffer, rounds, rounds*fullDiskRound, h.next-first, st.WriteErrors)
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	h.s = nil
	h.balance()
}

// While a backlog larger than the disk goes out a disk-full at a time, the
// heap stays within MemoryBytes: the written part of the waiting entries'
// array is let go as the new points MaxBuffer lets in take its place.
func TestMemoryBytesBoundsTheHeapThroughAFullDisk(t *testing.T) {
	mnt := mountTmpfs(t, "size=256k")
	o := Options{Dir: filepath.Join(mnt, "spool"), MaxBuffer: 2 << 20, FlushBytes: 128 << 10, SegmentBytes: 64 << 10,
		MaxBytes: 1 << 40, DeferFlush: true, FlushInterval: time.Hour}
	batch := recs(0, 100)
	check := heapWithin(t, o, "backlog 8x the disk")
	most := int64(0)
	held := func(when string) { most = max(most, check(when)) }
	s := open(t, o)
	defer s.Close()
	fill := func() { // until the buffer is full, flushing as the agent does
		for i := 0; ; i++ {
			if errors.Is(s.Append(batch), ErrBufferFull) {
				break
			}
			if i%10 == 9 {
				s.Flush()
			}
		}
		s.Flush()
	}
	fill()
	held("disk full, MaxBuffer reached")
	for round := range 16 {
		r := s.NewReader()
		_, last := drain(t, r)
		r.Close()
		if last.Points > 0 {
			if err := s.Ack(last, 0); err != nil {
				t.Fatal(err)
			}
		}
		fill() // the first flush writes what fits, the rest waits
		held(fmt.Sprintf("round %d", round))
	}
	t.Logf("at most %d bytes held, MemoryBytes %d; %+v", most, o.MemoryBytes(), s.Stats())
}
