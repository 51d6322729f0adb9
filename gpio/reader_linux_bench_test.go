package gpio

import (
	"context"
	"os"
	"testing"
)

// BenchmarkReaderPipe64: one write(2) of 64 events into a pipe, then one
// Reader.Read (poll + read + decode + loss accounting).
func BenchmarkReaderPipe64(b *testing.B) {
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
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(buf); err != nil {
			b.Fatal(err)
		}
		if n, _, err := rd.Read(ctx, evs); n != 64 || err != nil {
			b.Fatal(n, err)
		}
	}
	reportPerEvent(b, 64)
}
