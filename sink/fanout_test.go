package sink

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

// memDurable stands for the spool: it keeps the count of what it is given,
// or refuses it, and runs closing when it is closed.
type memDurable struct {
	recs    int
	refuse  error
	closing func()
}

func (m *memDurable) Write(recs []record.Record) error {
	if m.refuse != nil {
		return m.refuse
	}
	m.recs += len(recs)
	return nil
}

func (m *memDurable) Close() error { m.closing(); return nil }

// Every batch reaches the durable sink and each optional output; an
// optional output's full queue is its own counted drop, not an error, while
// the durable sink's refusal is.
func TestFanoutWrites(t *testing.T) {
	durable := &memDurable{closing: func() {}}
	tiny := NewQueued("tiny", (&memOut{}).open, 16) // no batch fits
	out := &memOut{}
	file := NewQueued("file", out.open, 1<<20)
	f := NewFanout(durable, tiny, file)
	for i := range 3 {
		if err := f.Write(batch(i*10, 10)); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	durable.refuse = errors.New("spool buffer full")
	if err := f.Write(batch(30, 10)); !errors.Is(err, durable.refuse) {
		t.Fatalf("the durable sink's refusal: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if durable.recs != 30 {
		t.Fatalf("the durable sink took %d records, want 30", durable.recs)
	}
	if st := tiny.Stats(); st.DroppedFull != 40 {
		t.Fatalf("tiny: %+v", st)
	}
	if st := file.Stats(); st.Written != 40 {
		t.Fatalf("file: %+v", st)
	}
	alone := NewFanout(nil, NewQueued("alone", (&memOut{}).open, 1<<20))
	if err := errors.Join(alone.Write(batch(0, 1)), alone.Close()); err != nil {
		t.Fatalf("no durable sink: %v", err)
	}
}

// Close gives the optional outputs their grace together, not one after the
// other, and closes the durable sink only after them.
func TestFanoutClosesOptionalOutputsTogetherThenTheDurableSink(t *testing.T) {
	gate := make(chan struct{})
	defer close(gate)
	// Eight stalled outputs: their graces together take one CloseGrace, one
	// after the other eight. The bound between, 4 CloseGrace, leaves a
	// loaded machine 3 s beyond the one grace (with two outputs it was
	// 1.5 CloseGrace: half a second).
	const n = 8
	var qs []*Queued
	for i := range n {
		qs = append(qs, NewQueued(fmt.Sprint("q", i), (&memOut{gate: gate}).open, 1<<20))
	}
	var lateOutputs bool
	durable := &memDurable{closing: func() {
		for _, q := range qs {
			lateOutputs = lateOutputs || q.Stats().DroppedClose == 0
		}
	}}
	f := NewFanout(durable, qs...)
	if err := f.Write(batch(0, 10)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("%d outputs closed in %v (grace %v each)", n, d, CloseGrace)
	if d > 4*CloseGrace {
		t.Fatalf("close took %v: the graces of %v ran one after the other", d, CloseGrace)
	}
	if lateOutputs {
		t.Fatal("the durable sink closed before the optional outputs gave up")
	}
}
