package gpio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// pollInterval bounds each wait, so that a cancelled context is seen within
// about this long.
const pollInterval = 100 * time.Millisecond

// errAgain is a read that found nothing after all (EAGAIN, EINTR).
var errAgain = errors.New("no data yet")

// eventFD is a descriptor that yields whole kernel records per read: a line
// request, a watching chip, or a pipe in tests.
type eventFD interface {
	// wait blocks until the descriptor is readable (true), hung up or in
	// error (true: the read tells which), or timeout passed (false).
	wait(timeout time.Duration) (bool, error)
	// read is one read(2); errAgain when there was nothing after all.
	read(p []byte) (int, error)
}

// Reader drains a request's edge events in batches: each Read waits for the
// descriptor, reads as many events as fit in one read(2), decodes them and
// accounts the kernel's drops. It is meant to be the body of an event
// source's producer (one goroutine); Read does not allocate.
type Reader struct {
	src   eventFD
	name  string // device and lines, for errors
	clock EventClock
	buf   []byte
	loss  LossTracker
	close func() error // what Close releases (OpenLines, OpenReplay)
}

func newReader(src eventFD, name string, clock EventClock, maxEvents int) *Reader {
	maxEvents = max(1, min(maxEvents, MaxEventBufferSize))
	return &Reader{src: src, name: name, clock: clock, buf: make([]byte, maxEvents*EventSize)}
}

// Read waits until events are queued or ctx is done, then reads up to
// len(events) of them (at most the reader's maxEvents) in one read(2) and
// decodes them in order into events. It returns how many, and how many
// events the kernel dropped just before them (seqno gaps, see LossTracker):
// n + lost is the edges the kernel saw since the previous Read. It returns
// ctx.Err() when ctx is done (within about 100 ms), io.EOF when the
// descriptor hung up, and an error wrapping ErrPartialEvent when a read ends
// inside an event (the whole events before it are returned and accounted).
// A record the kernel never writes (ErrBadEvent) ends the batch there; the
// records after it show as a seqno gap at the next Read.
func (r *Reader) Read(ctx context.Context, events []Event) (n int, lost uint64, err error) {
	if len(events) == 0 {
		return 0, 0, nil
	}
	want := min(len(events), len(r.buf)/EventSize) * EventSize
	for {
		if err := ctx.Err(); err != nil {
			return 0, 0, err
		}
		ready, err := r.src.wait(pollInterval)
		if err != nil {
			return 0, 0, fmt.Errorf("gpio %s: poll: %w", r.name, err)
		}
		if !ready {
			continue
		}
		nb, err := r.src.read(r.buf[:want])
		if err == errAgain {
			continue
		}
		if err != nil {
			return 0, 0, fmt.Errorf("gpio %s: read events: %w", r.name, err)
		}
		if nb == 0 {
			return 0, 0, io.EOF
		}
		n, err = DecodeEvents(events, r.buf[:nb], r.clock)
		for i := 0; i < n; i++ {
			lost += r.loss.Observe(&events[i])
		}
		if err != nil {
			return n, lost, fmt.Errorf("gpio %s: %w", r.name, err)
		}
		return n, lost, nil
	}
}

// Loss is the reader's loss accounting since it was made.
func (r *Reader) Loss() *LossTracker { return &r.loss }

// Clock is the clock the events are stamped with.
func (r *Reader) Clock() EventClock { return r.clock }

// Close releases what the Reader was opened on: the lines and the chip
// (OpenLines) or the capture (OpenReplay); a Reader of Request.Reader or
// NewFileReader has nothing of its own to close. Call it after the last
// Read returned.
func (r *Reader) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}

// OpenLines opens the chip at path (as Open), requests offsets with cfg
// (as Chip.RequestLines) and returns the request's Reader (as
// Request.Reader); its Close releases the lines and closes the chip.
func OpenLines(path string, offsets []int, cfg LineConfig, maxEvents int) (*Reader, error) {
	chip, err := Open(path)
	if err != nil {
		return nil, err
	}
	req, err := chip.RequestLines(offsets, cfg)
	if err != nil {
		chip.Close()
		return nil, err
	}
	rd := req.Reader(maxEvents)
	rd.close = func() error { return errors.Join(req.Close(), chip.Close()) }
	return rd, nil
}
