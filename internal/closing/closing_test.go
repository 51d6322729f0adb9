package closing

import (
	"errors"
	"io"
	"testing"
)

type file struct {
	closes int
	err    error
}

func (f *file) Close() error { f.closes++; return f.err }

func TestClearClosesOnce(t *testing.T) {
	f := &file{err: errors.New("busy")}
	p := f
	if err := Clear(&p); err != f.err {
		t.Fatalf("first Clear: %v, want %v", err, f.err)
	}
	if p != nil {
		t.Fatalf("Clear left %v, want nil", p)
	}
	if err := Clear(&p); err != nil {
		t.Fatalf("second Clear: %v, want nil", err)
	}
	if f.closes != 1 {
		t.Fatalf("closed %d times, want 1", f.closes)
	}
}

func TestClearInterface(t *testing.T) {
	f := &file{}
	var c io.Closer = f
	if err := Clear(&c); err != nil || c != nil || f.closes != 1 {
		t.Fatalf("Clear: err %v, left %v, %d closes; want nil, nil, 1", err, c, f.closes)
	}
	var none io.Closer
	if err := Clear(&none); err != nil {
		t.Fatalf("Clear of nil: %v", err)
	}
}
