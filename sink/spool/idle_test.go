package spool

import (
	"testing"
	"time"
)

// TestIdleFlusherSleeps (issue 37): the background flusher wakes for what
// is due, not at a fixed rate: an idle spool does not flush; points appended
// are written within FlushInterval and fsynced within FsyncInterval of the
// last fsync; an acknowledgement reaches the ack file within FsyncInterval;
// then it sleeps again.
func TestIdleFlusherSleeps(t *testing.T) {
	const flush, fsync = 20 * time.Millisecond, 200 * time.Millisecond
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: flush, FsyncInterval: fsync})
	defer s.Close()
	time.Sleep(20 * flush)
	if n := s.flushes.Load(); n != 0 {
		t.Fatalf("%d flushes of an empty spool in %v (a flush every %v)", n, 20*flush, flush)
	}
	if err := s.Append(recs(0, 5)); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine
	var got []string
	for len(got) < 5 && time.Now().Before(deadline) {
		lines, _ := drain(t, r)
		got = append(got, lines...)
		time.Sleep(flush / 4)
	}
	if len(got) != 5 {
		t.Fatalf("%d of 5 points written", len(got))
	}
	for s.Stats().Fsyncs == 0 && time.Now().Before(deadline) {
		time.Sleep(flush / 4)
	}
	if s.Stats().Fsyncs == 0 {
		t.Fatal("the points were never fsynced")
	}
	if err := s.Ack(Batch{FirstSeq: 1, LastSeq: 5, Points: 5}, 0); err != nil {
		t.Fatal(err)
	}
	for time.Now().Before(deadline) {
		if a, err := readAck(s.ackPath()); err == nil && a == 5 {
			break
		}
		time.Sleep(flush / 4)
	}
	if a, err := readAck(s.ackPath()); err != nil || a != 5 {
		t.Fatalf("ack file says %d (%v), want 5", a, err)
	}
	// Everything is written, fsynced and acknowledged: idle again.
	time.Sleep(2 * flush)
	before := s.flushes.Load()
	time.Sleep(2 * fsync)
	if n := s.flushes.Load() - before; n > 1 {
		t.Fatalf("%d flushes in %v with nothing to do", n, 2*fsync)
	}
	t.Logf("%d flushes in all", s.flushes.Load())
}

// TestFsyncJoinsTheFlushes (issue 37): data that comes once every fsync
// interval, at a phase other than the first point's (an agent started
// between its sources' seconds), is fsynced by the flushes that write it,
// not by a wake-up of the flusher's own on the phase of the first fsync:
// one flush per period, where the fsync's own timer made two.
func TestFsyncJoinsTheFlushes(t *testing.T) {
	const flush, fsync, periods = 10 * time.Millisecond, 300 * time.Millisecond, 12
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: flush, FsyncInterval: fsync})
	defer s.Close()
	if err := s.Append(recs(0, 1)); err != nil { // the start, off the data's phase
		t.Fatal(err)
	}
	time.Sleep(fsync / 2)
	tick := time.NewTicker(fsync)
	defer tick.Stop()
	n0, f0 := s.flushes.Load(), s.Stats().Fsyncs
	for i := range periods {
		if err := s.Append(recs(1+i, 1)); err != nil {
			t.Fatal(err)
		}
		<-tick.C
	}
	time.Sleep(fsync / 2)
	n, f := s.flushes.Load()-n0, s.Stats().Fsyncs-f0
	t.Logf("%d flushes, %d fsyncs for %d points a period apart", n, f, periods)
	// One flush per point, and two more at most while the phases meet
	// (a late tick on a loaded machine may take a second wake-up once).
	if n > periods+3 {
		t.Fatalf("%d flusher wake-ups for %d points, one every %v: the fsync keeps a phase of its own", n, periods, fsync)
	}
	if f < periods-2 {
		t.Fatalf("%d fsyncs for %d points written %v apart", f, periods, fsync)
	}
}

// TestIdleProducerFlushesAtOnce (issue 37): a producer gone idle (Idle)
// has its points written at once, with one wake-up of the flusher and
// none FlushInterval later for the timer its first point armed; Idle with
// nothing buffered wakes nobody.
func TestIdleProducerFlushesAtOnce(t *testing.T) {
	const flush = 300 * time.Millisecond
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: flush, FsyncInterval: time.Hour})
	defer s.Close()
	s.Idle()
	if err := s.Append(recs(0, 3)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s.Idle()
	r := s.NewReader()
	defer r.Close()
	var got []string
	for len(got) < 3 && time.Since(start) < 10*time.Second { // generous: a loaded machine
		lines, _ := drain(t, r)
		got = append(got, lines...)
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start)
	if len(got) != 3 {
		t.Fatalf("%d of 3 points written", len(got))
	}
	time.Sleep(3 * flush)
	if n := s.flushes.Load(); n != 1 {
		t.Fatalf("%d flusher wake-ups for one idle batch, want 1 (written after %v)", n, took)
	}
	if took >= flush {
		t.Logf("written only after %v (a loaded machine?)", took)
	}
}

// TestIdleFlushArmsNoTimer (issue 37): with IdleFlush the first point
// arms no timer (its producer's Idle flushes it; a timer stopped then
// still wakes the runtime at its time), and a producer that never rests
// still has its points written: an Append FlushInterval after the
// buffer's first point flushes.
func TestIdleFlushArmsNoTimer(t *testing.T) {
	const flush = 50 * time.Millisecond
	s := open(t, Options{Dir: t.TempDir(), FlushInterval: flush, FsyncInterval: time.Hour, IdleFlush: true})
	defer s.Close()
	if err := s.Append(recs(0, 1)); err != nil {
		t.Fatal(err)
	}
	s.tmu.Lock()
	armed := s.armed
	s.tmu.Unlock()
	if armed {
		t.Fatal("the first point armed the flusher's timer; its producer's Idle flushes it")
	}
	s.Idle()
	deadline := time.Now().Add(10 * time.Second) // generous: a loaded machine
	for s.flushes.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := s.flushes.Load(); n != 1 {
		t.Fatalf("%d flushes after Idle, want 1", n)
	}
	// A producer that never rests: an Append every flush/5 for 10 flush
	// intervals, and no Idle.
	n0 := s.flushes.Load()
	for i := range 50 {
		if err := s.Append(recs(1+i, 1)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(flush / 5)
	}
	time.Sleep(flush)
	if n := s.flushes.Load() - n0; n < 3 {
		t.Fatalf("%d flushes in 10 flush intervals of appends without Idle, want about 10", n)
	}
	if r := s.NewReader(); r != nil {
		defer r.Close()
		lines, _ := drain(t, r)
		if len(lines) < 40 {
			t.Fatalf("%d of 51 points written while the producer appended", len(lines))
		}
	}
}
