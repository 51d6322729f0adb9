package gpio

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// pollFD is a descriptor waited on with poll(2).
type pollFD struct {
	fds  [1]unix.PollFd
	file *os.File // keeps the descriptor open while the reader lives
}

func newPollFD(f *os.File) *pollFD {
	p := &pollFD{file: f}
	p.fds[0].Fd = int32(f.Fd())
	return p
}

func (p *pollFD) wait(timeout time.Duration) (bool, error) {
	p.fds[0].Events = unix.POLLIN
	p.fds[0].Revents = 0
	n, err := unix.Poll(p.fds[:], int(timeout/time.Millisecond))
	if err == unix.EINTR {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if n == 0 {
		return false, nil
	}
	if p.fds[0].Revents&unix.POLLNVAL != 0 {
		return false, unix.EBADF
	}
	return true, nil
}

func (p *pollFD) read(b []byte) (int, error) {
	n, err := unix.Read(int(p.fds[0].Fd), b)
	if err == unix.EAGAIN || err == unix.EINTR {
		return 0, errAgain
	}
	if err != nil {
		return 0, err
	}
	return n, nil
}

// NewFileReader returns a Reader of the gpio_v2_line_event records read from
// f: a line request's descriptor, or a pipe or FIFO that a test or a fixture
// feeds with the kernel's encoding (AppendEvent). name names the source in
// errors; clock is the clock the events were stamped with; maxEvents bounds
// one read (at most MaxEventBufferSize). The Reader does not close f.
func NewFileReader(f *os.File, name string, clock EventClock, maxEvents int) (*Reader, error) {
	if f == nil {
		return nil, fmt.Errorf("gpio %s: no file", name)
	}
	return newReader(newPollFD(f), name, clock, maxEvents), nil
}

// OpenReplay returns a Reader of a capture: the gpio_v2_line_event records
// (AppendEvent's encoding) of the file or FIFO at path, standing for the
// lines of chip (named in errors) and stamped with clock. It opens path
// non-blocking, so that opening a FIFO does not wait for its writer; the
// Reader's Close closes it. A file is read to its end (io.EOF), a FIFO
// until its writer closes it.
func OpenReplay(path, chip string, clock EventClock, maxEvents int) (*Reader, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("gpio %s: replay: %w", chip, err)
	}
	rd := newReader(newPollFD(f), chip+" replay "+path, clock, maxEvents)
	rd.close = f.Close
	return rd, nil
}
