package sensors

import (
	"context"
	"errors"
	"io"
	"time"
)

// Pump reads the buffer's scans into put, up to 64 a call, maybe none (put
// must not keep the slice), until ctx is done; io.EOF (a file at its end)
// is no error: it waits 100 ms and reads again. At ctx's end it stops the
// buffer and reads what it still holds into put too, so that every scan the
// device gave reaches put, and returns nil. A failing read or Stop ends it
// with that error.
func (b *Buffer) Pump(ctx context.Context, put func([]Scan)) error {
	batch := make([]Scan, 64)
	for ctx.Err() == nil {
		n, err := b.ReadScans(batch, 100*time.Millisecond)
		if errors.Is(err, io.EOF) { // nothing more now (a file at its end): wait, not spin
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return err
		}
		put(batch[:n])
	}
	if err := b.Stop(); err != nil {
		return err
	}
	for range drainReads {
		n, err := b.ReadScans(batch, drainWait)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		put(batch[:n])
		if n == 0 || b.Drained() {
			return nil
		}
	}
	return nil
}

// drainReads bounds the reads at the stop, in case a device went on
// pushing: a disabled buffer holds at most its length, read 64 a time.
const drainReads = 1024

// drainWait is the most a read at the stop waits: a disabled buffer has
// nothing more coming (a deadline already passed would read nothing at all).
const drainWait = 10 * time.Millisecond
