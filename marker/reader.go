package marker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/monagent/monagent/internal/closing"
)

// Reader reads the markers sent to the socket at a path. It binds the
// socket (Listen) when asked, and a read failure closes it; each datagram
// is parsed (its strings interned, Decoder) and counted by how it was
// stamped, and a malformed one is counted and its error kept. Listen, Next
// and Close run on one goroutine at a time; the counts may be read from
// any.
type Reader struct {
	path          string
	mode          os.FileMode
	l             *Listener        // nil while not bound
	dec           Decoder          // strings interned across lines
	buf           [MaxLen + 3]byte // a line, its "\r\n", and one more byte shows a longer one
	malformed     atomic.Uint64
	kernelStamped atomic.Uint64
	readStamped   atomic.Uint64
	lastMalformed atomic.Pointer[string]
}

// NewReader returns the reader of the socket at path, bound with mode's
// permissions; it binds nothing yet.
func NewReader(path string, mode os.FileMode) *Reader { return &Reader{path: path, mode: mode} }

// Listen binds the socket (the package's Listen) unless it is bound.
func (r *Reader) Listen() error {
	if r.l != nil {
		return nil
	}
	l, err := Listen(r.path, r.mode)
	if err != nil {
		return err
	}
	r.l = l
	return nil
}

// Path is the socket's path.
func (r *Reader) Path() string { return r.path }

// Mode is the socket file's permissions.
func (r *Reader) Mode() os.FileMode { return r.mode }

// Listening says whether the socket is bound.
func (r *Reader) Listening() bool { return r.l != nil }

// Stamps is the bound socket's kernel-stamp option (Listener.Stamps).
func (r *Reader) Stamps() string {
	if r.l == nil {
		return ""
	}
	return r.l.Stamps()
}

// Next waits for the next datagram until ctx is done and returns its
// marker and arrival (REALTIME: the kernel's stamp, else its read). A
// malformed datagram (one too long too) is counted and returned as an
// *Error (ErrSyntax): the caller reads on. A read failure closes the socket
// (Listen binds it again) and is returned; so is ctx's error.
func (r *Reader) Next(ctx context.Context) (Marker, int64, error) {
	if r.l == nil {
		return Marker{}, 0, fmt.Errorf("marker socket %s: not bound", r.path)
	}
	n, arrival, kernel, err := r.l.Read(ctx, r.buf[:])
	if err != nil && !errors.Is(err, ErrTooLong) {
		if ctx.Err() == nil {
			r.Close()
		}
		return Marker{}, 0, err
	}
	if kernel {
		r.kernelStamped.Add(1)
	} else {
		r.readStamped.Add(1)
	}
	var m Marker
	if err != nil {
		err = errorf("line", "longer than %d bytes", MaxLen)
	} else {
		m, err = r.dec.Parse(r.buf[:n])
	}
	if err != nil {
		s := err.Error()
		r.lastMalformed.Store(&s)
		r.malformed.Add(1)
		return Marker{}, arrival, err
	}
	return m, arrival, nil
}

// Close closes the socket and removes its file, if the file is still the
// one it bound (Listener.Close); nil when it is not bound.
func (r *Reader) Close() error { return closing.Clear(&r.l) }

// Malformed is how many datagrams were dropped as malformed.
func (r *Reader) Malformed() uint64 { return r.malformed.Load() }

// LastMalformed is the error of the last malformed datagram, "" before one.
func (r *Reader) LastMalformed() string {
	if p := r.lastMalformed.Load(); p != nil {
		return *p
	}
	return ""
}

// KernelStamped is how many datagrams arrived with the kernel's stamp.
func (r *Reader) KernelStamped() uint64 { return r.kernelStamped.Load() }

// ReadStamped is how many datagrams were stamped on their read instead.
func (r *Reader) ReadStamped() uint64 { return r.readStamped.Load() }
