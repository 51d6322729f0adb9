package sink

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// Idler is a sink told when its writer has nothing more for now (its
// queue is empty): a sink that holds records back to write them together
// (the spool, FlushInterval after the first) writes them then, in the
// instant the records came, rather than waking again for them later.
type Idler interface {
	Idle()
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
