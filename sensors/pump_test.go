package sensors

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/monagent/monagent/sensors/sensorstest"
)

// stamps are the fixture ADC's three kernel timestamps.
const stamps = "[1700000000000000000 1700000000010000000 1700000000020000000]"

// pump runs b.Pump, cancelling ctx once it has put want scans (0: never).
func pump(ctx context.Context, b *Buffer, want int) ([]Scan, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got []Scan
	err := b.Pump(ctx, func(s []Scan) {
		if got = append(got, s...); len(got) == want {
			cancel()
		}
	})
	return got, err
}

func stampsOf(scans []Scan) string {
	var s []int64
	for _, sc := range scans {
		s = append(s, sc.Stamp)
	}
	return fmt.Sprint(s)
}

// TestPump: the scans come in order, and at ctx's end the buffer is
// stopped; what it still holds then is read too (all three here: ctx ended
// before the first read).
func TestPump(t *testing.T) {
	for _, cancelled := range []bool{false, true} {
		t.Run(fmt.Sprintf("cancelled=%v", cancelled), func(t *testing.T) {
			b := openADC(t, board(t))
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if cancelled {
				cancel()
			}
			got, err := pump(ctx, b, 3)
			if err != nil || stampsOf(got) != stamps {
				t.Errorf("%v, %v; want %s", stampsOf(got), err, stamps)
			}
			if v, _ := readString(filepath.Join(b.Device.Dir, "buffer", "enable")); v != "0" {
				t.Errorf("buffer left enabled: %q", v)
			}
		})
	}
}

// TestPumpWaitsAtEOF: after io.EOF the next read comes 100 ms later, not
// at once. Without a timestamp channel a scan's Stamp is when its read
// window opened, the last read that drained the buffer (or the open), and
// Read is the window's middle: half the wait at least.
func TestPumpWaitsAtEOF(t *testing.T) {
	fs := NewFS(sensorstest.BoardWithoutTimestamp(t))
	node := filepath.Join(fs.Dev, "iio:device0")
	recs, err := os.ReadFile(node) // the fixture's scans, back after the wait
	if err == nil {
		err = os.Truncate(node, 0)
	}
	if err != nil {
		t.Fatal(err)
	}
	b := openADC(t, fs)
	done := make(chan []Scan)
	go func() {
		got, err := pump(t.Context(), b, 3)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	time.Sleep(100 * time.Millisecond) // the window from the open spans the wait too
	if err := os.WriteFile(node, recs, 0o644); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if len(got) != 3 {
		t.Fatalf("%d scans, want 3", len(got))
	}
	for i, sc := range got {
		if w := time.Duration(sc.Read - sc.Stamp); w < 50*time.Millisecond {
			t.Errorf("scan %d: read time %v after its window opened, want half the wait at least", i, w)
		}
	}
}

// TestPumpReadError: a failing read ends Pump with its error.
func TestPumpReadError(t *testing.T) {
	b := openADC(t, board(t))
	b.f.Close()
	if _, err := pump(t.Context(), b, 0); !errors.Is(err, os.ErrClosed) {
		t.Errorf("%v, want the read's %v", err, os.ErrClosed)
	}
}
