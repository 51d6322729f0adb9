package gpio

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pipeReader returns a Reader fed through a pipe, and the pipe's write end.
func pipeReader(t *testing.T, maxEvents int) (*Reader, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rd, err := NewFileReader(r, "pipe", ClockMonotonic, maxEvents)
	if err != nil {
		t.Fatal(err)
	}
	return rd, w
}

func write(t *testing.T, w *os.File, evs ...Event) {
	t.Helper()
	var b []byte
	for _, e := range evs {
		b = AppendEvent(b, e)
	}
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
}

func edge(ts int64, offset, seqno, lineSeqno uint32, e Edge) Event {
	return Event{TimestampNS: ts, Offset: offset, Seqno: seqno, LineSeqno: lineSeqno, Edge: e}
}

func TestReaderBatchOrderGaps(t *testing.T) {
	littleEndian(t)
	rd, w := pipeReader(t, 16)
	// Two lines; line 5 lost edges 3 and 4 (request seqnos 4 and 5) in the
	// kernel's queue; the golden records come first, verbatim.
	if _, err := w.Write(append(append([]byte(nil), goldenRising...), goldenFalling...)); err != nil {
		t.Fatal(err)
	}
	sent := []Event{
		edge(1234567890123, 17, 3, 3, EdgeRising),
		edge(1234567990123, 17, 4, 4, EdgeFalling),
		edge(2000, 5, 5, 1, EdgeRising),
		edge(3000, 5, 6, 2, EdgeFalling),
		edge(4000, 5, 9, 5, EdgeRising),
	}
	write(t, w, sent[2:]...)
	ctx := context.Background()
	evs := make([]Event, 16)
	n, lost, err := rd.Read(ctx, evs)
	if err != nil || n != 5 {
		t.Fatalf("Read = %d, %d, %v; want all 5 events in one read", n, lost, err)
	}
	for i := range sent {
		if evs[i] != sent[i] {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], sent[i])
		}
	}
	// Line 17 starts at line_seqno 3 (2 lost before it), line 5 skipped 2.
	if lost != 4 {
		t.Errorf("lost %d, want 4 (2 before line 17's first, 2 on line 5)", lost)
	}
	lines := rd.Loss().Lines(nil)
	if len(lines) != 2 || lines[0] != (LineLoss{17, 2, 2}) || lines[1] != (LineLoss{5, 3, 2}) {
		t.Errorf("per line %+v", lines)
	}
}

func TestReaderBatchBound(t *testing.T) {
	rd, w := pipeReader(t, 3)
	var sent []Event
	for i := range 8 {
		sent = append(sent, edge(int64(i), 1, uint32(i+1), uint32(i+1), EdgeRising))
	}
	write(t, w, sent...)
	evs := make([]Event, 16)
	var got []Event
	for _, want := range []int{3, 3, 2} { // maxEvents bounds each read
		n, lost, err := rd.Read(context.Background(), evs)
		if n != want || lost != 0 || err != nil {
			t.Fatalf("Read = %d, %d, %v; want %d events", n, lost, err, want)
		}
		got = append(got, evs[:n]...)
	}
	// A caller's buffer shorter than maxEvents bounds the read too.
	write(t, w, edge(9, 1, 9, 9, EdgeFalling), edge(10, 1, 10, 10, EdgeRising))
	n, _, err := rd.Read(context.Background(), evs[:1])
	if n != 1 || err != nil || evs[0].TimestampNS != 9 {
		t.Fatalf("Read into 1 = %d, %v, %+v", n, err, evs[0])
	}
	for i := range sent {
		if got[i] != sent[i] {
			t.Errorf("event %d = %+v, want %+v", i, got[i], sent[i])
		}
	}
}

func TestReaderPartialAndEOF(t *testing.T) {
	littleEndian(t)
	rd, w := pipeReader(t, 16)
	if _, err := w.Write(append(append([]byte(nil), goldenRising...), goldenFalling[:20]...)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	evs := make([]Event, 16)
	n, lost, err := rd.Read(context.Background(), evs)
	if n != 1 || lost != 2 || !errors.Is(err, ErrPartialEvent) {
		t.Fatalf("Read = %d, %d, %v; want the whole event, its 2 lost and ErrPartialEvent", n, lost, err)
	}
	if !strings.Contains(err.Error(), "pipe") || !strings.Contains(err.Error(), "20 bytes") {
		t.Errorf("error %q names neither the source nor the partial bytes", err)
	}
	n, _, err = rd.Read(context.Background(), evs)
	if n != 0 || err != io.EOF {
		t.Fatalf("Read after hang-up = %d, %v; want io.EOF", n, err)
	}
}

func TestReaderCancel(t *testing.T) {
	rd, _ := pipeReader(t, 16)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := rd.Read(ctx, make([]Event, 4))
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Read after cancel: %v", err)
		}
	case <-time.After(10 * time.Second): // a hang, not a speed bound
		t.Fatal("Read did not return after its context was cancelled")
	}
}

func TestReaderAllocs(t *testing.T) {
	rd, w := pipeReader(t, 64)
	var batch []byte
	seq := uint32(0)
	for range 64 {
		seq++
		batch = AppendEvent(batch, edge(int64(seq), 2, seq, seq, EdgeRising))
	}
	evs := make([]Event, 64)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := w.Write(batch); err != nil { // pipe: 3 KiB fits
			t.Fatal(err)
		}
		if n, _, err := rd.Read(ctx, evs); n != 64 || err != nil {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Errorf("write + Read of 64 events allocates %v times, want 0", allocs)
	}
}

// TestOpenReplay: a FIFO opens before its writer does; its records are read
// in order to the writer's close (io.EOF); a file that is absent is an error
// naming the chip.
func TestOpenReplay(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "edges")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	rd, err := OpenReplay(fifo, "gpiochip3", ClockRealtime, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	write(t, w, edge(1000, 2, 1, 1, EdgeRising), edge(2000, 2, 2, 2, EdgeFalling))
	w.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	evs := make([]Event, 16)
	n, lost, err := rd.Read(ctx, evs)
	if err != nil || n != 2 || lost != 0 || evs[1].TimestampNS != 2000 || evs[1].Clock != ClockRealtime {
		t.Fatalf("read %d (%+v), %d lost, %v", n, evs[:n], lost, err)
	}
	if _, _, err := rd.Read(ctx, evs); err != io.EOF {
		t.Errorf("after the writer closed: %v, want io.EOF", err)
	}
	if err := rd.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	_, err = OpenReplay(filepath.Join(t.TempDir(), "absent"), "gpiochip3", ClockMonotonic, 16)
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "gpio gpiochip3: replay: ") {
		t.Errorf("an absent capture: %v", err)
	}
}
