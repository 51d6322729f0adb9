package sink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/monagent/monagent/record"
)

// Sink takes batches of records.
type Sink interface {
	// Write accepts a batch. Records it cannot encode are counted and reported in
	// the error; the rest of the batch is still written.
	Write(recs []record.Record) error
	// Close flushes and releases the sink.
	Close() error
}

// Stats are a sink's counters.
type Stats struct {
	Records  uint64 // records written
	Rejected uint64 // records that could not be encoded
	Bytes    uint64
}

// Writer is a sink that writes line protocol to an io.Writer (stdout, a file).
type Writer struct {
	name string
	mu   sync.Mutex
	w    *bufio.Writer
	c    io.Closer
	enc  record.Encoder
	buf  []byte
	st   Stats
}

// NewWriter returns a sink writing to w; name appears in errors.
func NewWriter(name string, w io.Writer) *Writer {
	return &Writer{name: name, w: bufio.NewWriterSize(w, 64<<10)}
}

// OpenFile returns a queued sink (see Queued) appending line protocol to
// path, creating it and its directory, with at most maxBytes waiting. A
// regular file is tried at once, so that a bad path fails here; the sink's
// writer opens it for good, so that it may wait at a FIFO for its reader
// without holding up anyone.
func OpenFile(path string, maxBytes int) (*Queued, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("output file %s: %w", path, err)
	}
	open := func() (io.WriteCloser, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("output file %s: %w", path, err)
		}
		return f, nil
	}
	if st, err := os.Stat(path); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
		f, err := open() // a bad path fails now, not in the writer
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return NewQueued(path, open, maxBytes), nil
}

// Stdout returns a queued sink writing to standard output, which it never
// closes.
func Stdout(maxBytes int) *Queued {
	return NewQueued("stdout", func() (io.WriteCloser, error) { return nopCloser{os.Stdout}, nil }, maxBytes)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// Name is where the sink writes.
func (s *Writer) Name() string { return s.name }

// Write implements Sink; each batch is flushed before Write returns.
func (s *Writer) Write(recs []record.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rejected int
	var encErr error
	s.buf, rejected, encErr = s.enc.Append(s.buf[:0], recs)
	s.st.Rejected += uint64(rejected)
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.st.Records += uint64(len(recs) - rejected)
	s.st.Bytes += uint64(len(s.buf))
	if encErr != nil {
		return fmt.Errorf("%s: %w", s.name, encErr)
	}
	return nil
}

// Stats returns the sink's counters.
func (s *Writer) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Close implements Sink.
func (s *Writer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.w.Flush()
	if s.c != nil {
		err = errors.Join(err, s.c.Close())
	}
	return err
}

// Multi writes every batch to each of its sinks; one sink's failure does not stop
// the others.
type Multi []Sink

// Write implements Sink.
func (m Multi) Write(recs []record.Record) error {
	var errs []error
	for _, s := range m {
		errs = append(errs, s.Write(recs))
	}
	return errors.Join(errs...)
}

// Close implements Sink.
func (m Multi) Close() error {
	var errs []error
	for _, s := range m {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
