package timeapi

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// createFile opens or creates the file in place, takes its exclusive lock,
// grows it to SegmentSize (never shrinks it: a reader's mapping must not
// lose its pages) and maps it shared, read-write.
//
// It never follows a symbolic link and takes only a regular file of its own
// user: a default path under a shared /tmp must not let another user point
// the agent (often root) at a file of theirs to overwrite.
func createFile(path string, mode os.FileMode) (segment, func() error, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, mode)
	if errors.Is(err, syscall.ELOOP) {
		return segment{}, nil, errors.New("a symbolic link: the segment must be a file of its own")
	}
	if err != nil {
		return segment{}, nil, err
	}
	fail := func(err error) (segment, func() error, error) {
		f.Close()
		return segment{}, nil, err
	}
	var own syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &own); err != nil {
		return fail(fmt.Errorf("stat: %w", err))
	}
	if own.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fail(errors.New("not a regular file"))
	}
	if uid := os.Geteuid(); int(own.Uid) != uid {
		return fail(fmt.Errorf("owned by uid %d, not this agent's %d: another user's file is not overwritten", own.Uid, uid))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return fail(errors.New("another writer holds it (flock)"))
		}
		return fail(fmt.Errorf("flock: %w", err))
	}
	if err := f.Chmod(mode); err != nil { // the umask does not narrow who may read
		return fail(err)
	}
	st, err := f.Stat()
	if err != nil {
		return fail(err)
	}
	if st.Size() < SegmentSize {
		if err := f.Truncate(SegmentSize); err != nil {
			return fail(err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, SegmentSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(fmt.Errorf("mmap: %w", err))
	}
	return newSegment(mem), func() error {
		err := syscall.Munmap(mem)
		if cerr := f.Close(); err == nil { // closing releases the flock
			err = cerr
		}
		return err
	}, nil
}

// openFile maps a segment read-only. A file shorter than a segment is one
// still being created.
func openFile(path string) (segment, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return segment{}, nil, err
	}
	defer f.Close() // the mapping outlives the descriptor
	st, err := f.Stat()
	if err != nil {
		return segment{}, nil, err
	}
	if st.Size() < SegmentSize {
		return segment{}, nil, fmt.Errorf("%d bytes, want %d: %w", st.Size(), SegmentSize, ErrNotInitialised)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, SegmentSize, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return segment{}, nil, fmt.Errorf("mmap: %w", err)
	}
	return newSegment(mem), func() error { return syscall.Munmap(mem) }, nil
}
