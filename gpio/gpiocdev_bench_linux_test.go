package gpio

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/warthog618/go-gpiocdev/uapi"
)

// BenchmarkPipe64SideBySide decodes the same batch of 64 kernel events, fed
// through a pipe, with monagent's Reader (poll, one read(2), batch decode,
// loss accounting) and with go-gpiocdev v0.9.1's uapi.ReadLineEvent (one
// read(2) and a reflective binary.Read per event, as its line watcher does),
// in one run, and reports both per event and the ratio. The write into the
// pipe is not timed.
func BenchmarkPipe64SideBySide(b *testing.B) {
	littleEndian(b)
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rd, err := NewFileReader(r, "pipe", ClockMonotonic, 64)
	if err != nil {
		b.Fatal(err)
	}
	buf, evs := batch64(), make([]Event, 64)
	ctx := context.Background()
	fd := r.Fd() // go-gpiocdev reads the descriptor itself
	var ours, theirs time.Duration
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if n, _, err := rd.Read(ctx, evs); n != 64 || err != nil {
			b.Fatal(n, err)
		}
		t1 := time.Now()
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		for i := range 64 {
			le, err := uapi.ReadLineEvent(fd)
			if err != nil || le.Seqno != evs[i].Seqno || int64(le.Timestamp) != evs[i].TimestampNS {
				b.Fatalf("go-gpiocdev event %d: %+v, %v; monagent decoded %+v", i, le, err, evs[i])
			}
		}
		t3 := time.Now()
		ours += t1.Sub(t0)
		theirs += t3.Sub(t2)
	}
	n := float64(b.N * 64)
	b.ReportMetric(float64(ours.Nanoseconds())/n, "monagent-ns/event")
	b.ReportMetric(float64(theirs.Nanoseconds())/n, "gpiocdev-ns/event")
	b.ReportMetric(float64(theirs)/float64(ours), "x-faster")
}
