package gpio

import (
	"slices"
	"strings"
	"testing"
)

// ev is an edge of a line: seqno of the request, line_seqno of the line.
func ev(offset, seqno, lineSeqno uint32) Event {
	return Event{Offset: offset, Seqno: seqno, LineSeqno: lineSeqno, Edge: EdgeRising}
}

func TestLossTracker(t *testing.T) {
	for _, c := range []struct {
		name    string
		events  []Event
		lost    []uint64 // per event
		lines   []LineLoss
		seqLost uint64
		anomaly uint64
	}{
		{
			name:   "no gaps",
			events: []Event{ev(4, 1, 1), ev(4, 2, 2), ev(4, 3, 3)},
			lost:   []uint64{0, 0, 0},
			lines:  []LineLoss{{4, 3, 0}},
		},
		{
			// The kernel dropped the four oldest before the first read.
			name:    "first event of a request after an overflow",
			events:  []Event{ev(4, 5, 5), ev(4, 6, 6)},
			lost:    []uint64{4, 0},
			lines:   []LineLoss{{4, 2, 4}},
			seqLost: 4,
		},
		{
			name:    "gaps in one line",
			events:  []Event{ev(4, 1, 1), ev(4, 2, 2), ev(4, 19, 19), ev(4, 20, 20), ev(4, 22, 22)},
			lost:    []uint64{0, 0, 16, 0, 1},
			lines:   []LineLoss{{4, 5, 17}},
			seqLost: 17,
		},
		{
			// Two lines of one request: seqno is the request's, line_seqno
			// each line's; line 9's second and third edges were dropped.
			name:    "two lines",
			events:  []Event{ev(8, 1, 1), ev(9, 2, 1), ev(8, 3, 2), ev(8, 6, 3), ev(9, 7, 4)},
			lost:    []uint64{0, 0, 0, 0, 2},
			lines:   []LineLoss{{8, 3, 0}, {9, 2, 2}},
			seqLost: 2,
		},
		{
			name:    "line_seqno wraps",
			events:  []Event{ev(1, 0xfffffffe, 0xfffffffe), ev(1, 0xffffffff, 0xffffffff), ev(1, 1, 1)},
			lost:    []uint64{0xfffffffd, 0, 1},
			lines:   []LineLoss{{1, 3, 0xfffffffe}},
			seqLost: 0xfffffffe,
		},
		{
			name:    "repeated and older numbers are anomalies, not losses",
			events:  []Event{ev(2, 1, 1), ev(2, 1, 1), ev(2, 3, 3), ev(2, 2, 2), ev(2, 4, 4)},
			lost:    []uint64{0, 0, 1, 0, 1},
			lines:   []LineLoss{{2, 5, 2}},
			seqLost: 1,
			anomaly: 2,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			var tr LossTracker
			for i := range c.events {
				if got := tr.Observe(&c.events[i]); got != c.lost[i] {
					t.Errorf("event %d (%+v): lost %d, want %d", i, c.events[i], got, c.lost[i])
				}
			}
			if got := tr.Lines(nil); !slices.Equal(got, c.lines) {
				t.Errorf("Lines = %+v, want %+v", got, c.lines)
			}
			var sum uint64
			for _, l := range c.lines {
				sum += l.Lost
			}
			if tr.Lost() != sum || tr.Received() != uint64(len(c.events)) {
				t.Errorf("Lost %d Received %d, want %d %d", tr.Lost(), tr.Received(), sum, len(c.events))
			}
			if tr.SeqnoLost() != c.seqLost || tr.Anomalies() != c.anomaly {
				t.Errorf("SeqnoLost %d Anomalies %d, want %d %d", tr.SeqnoLost(), tr.Anomalies(), c.seqLost, c.anomaly)
			}
		})
	}
}

// TestLossTrackerConservation: for a kernel's run of edges with some dropped,
// received + lost = the edges the kernel numbered, per line.
func TestLossTrackerConservation(t *testing.T) {
	var tr LossTracker
	seen := map[uint32]uint32{} // line -> edges the "kernel" saw
	var seq uint32
	for i := 0; i < 5000; i++ {
		line := uint32(i*7%3 + 10)
		seq++
		seen[line]++
		if i%11 == 3 || (i > 1000 && i < 1100) { // dropped by the kfifo
			continue
		}
		e := ev(line, seq, seen[line])
		tr.Observe(&e)
	}
	// Drops after a line's last read show with its next event: read one more
	// edge of each line.
	for _, line := range []uint32{10, 11, 12} {
		seq++
		seen[line]++
		e := ev(line, seq, seen[line])
		tr.Observe(&e)
	}
	for _, l := range tr.Lines(nil) {
		if l.Received+l.Lost != uint64(seen[l.Offset]) {
			t.Errorf("line %d: received %d + lost %d != %d edges", l.Offset, l.Received, l.Lost, seen[l.Offset])
		}
	}
	if tr.SeqnoLost() != tr.Lost() {
		t.Errorf("SeqnoLost %d != Lost %d", tr.SeqnoLost(), tr.Lost())
	}
}

func TestLossTrackerManyLines(t *testing.T) {
	var tr LossTracker
	for o := uint32(0); o < MaxLines+2; o++ {
		e := ev(o, o+1, 1)
		tr.Observe(&e)
	}
	if got := len(tr.Lines(nil)); got != MaxLines {
		t.Errorf("%d lines tracked, want %d", got, MaxLines)
	}
	if tr.Anomalies() != 2 {
		t.Errorf("Anomalies %d, want 2 (lines beyond MaxLines)", tr.Anomalies())
	}
}

func TestLossTrackerAllocs(t *testing.T) {
	var tr LossTracker
	evs := []Event{ev(1, 1, 1), ev(2, 2, 1), ev(1, 5, 3)}
	if a := testing.AllocsPerRun(100, func() {
		for i := range evs {
			tr.Observe(&evs[i])
		}
	}); a != 0 {
		t.Errorf("Observe allocates %v times, want 0", a)
	}
}

// NewLosses hands out each line's losses once, as they grow.
func TestLossTrackerNewLosses(t *testing.T) {
	var tr LossTracker
	got := map[uint32]uint64{}
	take := func(off uint32, n uint64) { got[off] += n }
	see := func(off, seq, lineSeq uint32) { e := ev(off, seq, lineSeq); tr.Observe(&e) }
	see(3, 1, 1)
	see(5, 2, 1)
	see(3, 5, 4) // line 3 lost 2
	tr.NewLosses(take)
	tr.NewLosses(take) // nothing new
	see(5, 7, 3)       // line 5 lost 1
	see(3, 8, 5)
	tr.NewLosses(take)
	if got[3] != 2 || got[5] != 1 || len(got) != 2 {
		t.Errorf("losses handed out %v, want line 3: 2, line 5: 1", got)
	}
}

func TestConsumerFitsTheKernelsLabel(t *testing.T) {
	if got := Consumer("/dev/gpiochip0"); got != "monagent-gpiochip0" {
		t.Errorf("Consumer = %q", got)
	}
	if got := Consumer("/dev/" + strings.Repeat("x", 40)); len(got) != 31 {
		t.Errorf("Consumer of a long name: %q, %d bytes", got, len(got))
	}
}
