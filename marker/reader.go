package marker

import (
	"context"
	"errors"
	"sync/atomic"
)

// Reader turns a Listener's datagrams into markers: each is parsed (its
// strings interned, Decoder) and counted by how it was stamped; a malformed
// one is counted and its error kept. Next runs on one goroutine; the counts
// may be read from any.
type Reader struct {
	dec           Decoder
	buf           [MaxLen + 3]byte // a line, its "\r\n", and one more byte shows a longer one
	malformed     atomic.Uint64
	kernelStamped atomic.Uint64
	readStamped   atomic.Uint64
	lastMalformed atomic.Pointer[string]
}

// Next waits on l for the next datagram until ctx is done and returns its
// marker and arrival (REALTIME: the kernel's stamp, else its read). A
// malformed datagram (one too long too) is counted and returned as an
// *Error (ErrSyntax): the caller reads on. Any other error is l's.
func (r *Reader) Next(ctx context.Context, l *Listener) (Marker, int64, error) {
	n, arrival, kernel, err := l.Read(ctx, r.buf[:])
	if err != nil && !errors.Is(err, ErrTooLong) {
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
