package spool

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/internal/testbed"
)

// Issue 20 items 1 and 2: real faults on real filesystems. Each test breaks
// the disk side, appends through it, mends it, and checks that the spool
// recovered by itself and that every point handed to Append was delivered or
// counted as dropped, exactly.

// mountTmpfs mounts a tmpfs with the given options on a new directory and
// unmounts it when the test ends.
func mountTmpfs(t *testing.T, opts string) string {
	t.Helper()
	return testbed.MountTmpfs(t, opts)
}

// faultHarness appends numbered points, reads and acknowledges them, and keeps
// the tally: every point handed to Append is delivered once or counted.
type faultHarness struct {
	t         *testing.T
	o         Options
	s         *Spool
	next      int // number of the next point
	offered   int
	delivered map[int]int // point number -> session that delivered it
	session   int         // opens so far
	dropped   uint64      // the dropped counters of closed spools
	flushErrs []error
}

func newFaultHarness(t *testing.T, o Options) *faultHarness {
	// The test drives every flush itself: no background flusher, no early kick.
	o.DeferFlush, o.FlushInterval, o.FlushBytes = true, time.Hour, 1<<30
	h := &faultHarness{t: t, o: o, delivered: map[int]int{}, session: 1}
	h.s = open(t, o)
	return h
}

// round appends n points and flushes, recording a flush error.
func (h *faultHarness) round(n int) error {
	h.s.Append(recs(h.next, n))
	h.next += n
	h.offered += n
	err := h.s.Flush()
	if err != nil {
		h.flushErrs = append(h.flushErrs, err)
	}
	return err
}

// drain reads and acknowledges every entry on disk.
func (h *faultHarness) drain() {
	h.t.Helper()
	r := h.s.NewReader()
	defer r.Close()
	for {
		e, ok, err := r.TryNext()
		if err != nil {
			h.t.Fatalf("reader: %v (stats %+v)", err, h.s.Stats())
		}
		if !ok {
			return
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(e.Lines), "\n"), "\n") {
			i, err := pointNumber(l)
			if err != nil {
				h.t.Fatal(err)
			}
			// A spool closed before its acknowledgement reached the disk
			// sends points again after the restart; never twice in a session.
			if h.delivered[i] == h.session {
				h.t.Fatalf("point %d delivered twice", i)
			}
			h.delivered[i] = h.session
		}
		if err := h.s.Ack(Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}, 0); err != nil {
			h.t.Fatal(err)
		}
	}
}

// pointNumber reads i from a line of rec(i).
func pointNumber(line string) (int, error) {
	_, rest, ok := strings.Cut(line, " i=")
	v, _, ok2 := strings.Cut(rest, "i ")
	n, err := strconv.Atoi(v)
	if !ok || !ok2 || err != nil {
		return 0, fmt.Errorf("line %q is not one of rec(i)", line)
	}
	return n, nil
}

// close closes the spool (its error is returned, the disk may still be
// broken) and keeps its dropped counters.
func (h *faultHarness) close() error {
	err := h.s.Close()
	h.dropped += dropped(h.s.Stats())
	return err
}

func (h *faultHarness) reopen() {
	h.s = open(h.t, h.o)
	h.session++
}

// balance checks appended = delivered + counted.
func (h *faultHarness) balance() {
	h.t.Helper()
	if uint64(h.offered) != uint64(len(h.delivered))+h.dropped {
		h.t.Fatalf("appended %d != delivered %d + counted %d (lost %d)", h.offered, len(h.delivered), h.dropped,
			int64(h.offered)-int64(len(h.delivered))-int64(h.dropped))
	}
	h.t.Logf("appended %d = delivered %d + counted %d", h.offered, len(h.delivered), h.dropped)
}

// runFault drives a spool through a fault that breakIt starts and mend ends,
// twice: the first time it is mended while the spool runs (it must recover by
// itself), the second time only after Close (whatever Close could not write
// must be counted). remount, if set, makes the filesystem forget what it
// holds in memory before the spool opens again: only what reached the disk
// is found.
func runFault(t *testing.T, o Options, want error, breakIt func(*Spool), mend, remount func()) {
	h := newFaultHarness(t, o)
	if err := h.round(10); err != nil {
		t.Fatalf("flush before the fault: %v", err)
	}
	breakIt(h.s)
	for i := 0; i < 100; i++ {
		h.round(10)
	}
	if len(h.flushErrs) == 0 || !errors.Is(h.flushErrs[0], want) {
		t.Fatalf("flush errors during the fault %v, want %v", h.flushErrs, want)
	}
	st := h.s.Stats()
	if st.DroppedDisk == 0 || st.DroppedBuffer != 0 {
		t.Fatalf("a failing disk's drops are not counted as dropped_disk: %+v", st)
	}
	mend()
	if err := h.s.Flush(); err != nil {
		t.Fatalf("the spool did not recover once the fault was gone: %v (stats %+v)", err, h.s.Stats())
	}
	for i := 0; i < 10; i++ { // appends resume without a restart
		if err := h.round(10); err != nil {
			t.Fatalf("flush %d after recovery: %v", i, err)
		}
	}
	h.drain()
	if got, want := len(h.delivered), h.offered-int(dropped(h.s.Stats())); got != want {
		t.Fatalf("delivered %d after recovery, want %d (stats %+v)", got, want, h.s.Stats())
	}
	// The fault again, and Close while it lasts.
	breakIt(h.s)
	for i := 0; i < 30; i++ {
		h.round(10)
	}
	h.close()
	mend()
	if remount != nil {
		remount()
	}
	h.reopen()
	h.drain()
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	h.balance()
}

// fillFS writes one file until the filesystem is full and returns a function
// that removes it.
func fillFS(t *testing.T, dir string) func() {
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
}

// fillInodes creates empty files until the filesystem has no inode left and
// returns a function that removes them.
func fillInodes(t *testing.T, dir string) func() {
	var made []string
	for i := 0; ; i++ {
		p := filepath.Join(dir, fmt.Sprintf("inode%d", i))
		f, err := os.Create(p)
		if err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
		f.Close()
		made = append(made, p)
	}
	return func() {
		for _, p := range made {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestDiskFullIsCountedAndRecovered(t *testing.T) {
	dir := mountTmpfs(t, "size=512k,nr_inodes=1024")
	var mend func()
	runFault(t, Options{Dir: filepath.Join(dir, "spool"), SegmentBytes: 16 << 10, MaxBytes: 1 << 30, MaxBuffer: 8 << 10},
		unix.ENOSPC,
		func(*Spool) { mend = fillFS(t, dir) },
		func() { mend() }, nil)
}

func TestInodeExhaustionIsCountedAndRecovered(t *testing.T) {
	dir := mountTmpfs(t, "size=8m,nr_inodes=64")
	var mend func()
	// SegmentBytes 1: every write rolls, every next write needs a new inode.
	runFault(t, Options{Dir: filepath.Join(dir, "spool"), SegmentBytes: 1, MaxBytes: 1 << 30, MaxBuffer: 8 << 10},
		unix.ENOSPC,
		func(*Spool) { mend = fillInodes(t, dir) },
		func() { mend() }, nil)
}

func TestOutOfFileDescriptorsIsCountedAndRecovered(t *testing.T) {
	o := Options{Dir: t.TempDir(), SegmentBytes: 1, MaxBytes: 1 << 30, MaxBuffer: 8 << 10}
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	// Registered after TempDir: restored before the directory is removed.
	t.Cleanup(func() { unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
	breakIt := func(s *Spool) {
		// No descriptor can be opened from now on: the limit is the lowest
		// free descriptor, or the spool's open segment if it holds one (so
		// that closing it frees nothing usable).
		limit := lowestFreeFD(t)
		s.io.Lock()
		if s.active != nil {
			limit = min(limit, int(s.active.Fd()))
		}
		s.io.Unlock()
		lim := orig
		lim.Cur = uint64(limit)
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
	}
	mend := func() {
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
			t.Fatal(err)
		}
	}
	runFault(t, o, unix.EMFILE, breakIt, mend, nil)
}

// The next segment's name is taken (here by a directory): the spool tries
// again at every flush and goes on once the name is free.
func TestNameClashIsCountedAndRecovered(t *testing.T) {
	var clash string
	runFault(t, Options{Dir: t.TempDir(), SegmentBytes: 1, MaxBytes: 1 << 30, MaxBuffer: 8 << 10},
		unix.EEXIST,
		func(s *Spool) {
			s.io.Lock()
			clash = filepath.Join(s.opts.Dir, segName(s.nextSeq))
			s.io.Unlock()
			if err := os.Mkdir(clash, 0o755); err != nil {
				t.Fatal(err)
			}
		},
		func() {
			if err := os.Remove(clash); err != nil {
				t.Fatal(err)
			}
		}, nil)
}

// lowestFreeFD is the lowest descriptor number not open in this process.
func lowestFreeFD(t *testing.T) int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	open := map[int]bool{}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != self {
			open[fd] = true
		}
	}
	fd := 0
	for open[fd] {
		fd++
	}
	return fd
}

// mountLoopExt4 mounts an ext4 filesystem on a loop device whose backing
// file lies on a tmpfs, and trims it: the filesystem's metadata is backed by
// the tmpfs's pages, its free blocks are not. Once the tmpfs is full (fill
// back), writes still land in the page cache but fail at writeback, so fsync
// reports the error (ENOSPC), as on thin-provisioned storage. It returns the
// ext4 mount, the tmpfs, and a function that mounts the filesystem again
// (its page cache gone).
func mountLoopExt4(t *testing.T) (mnt, back string, remount func()) {
	t.Helper()
	for _, tool := range []string{"losetup", "mkfs.ext4", "fstrim"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	const size = 32 << 20
	back = mountTmpfs(t, fmt.Sprintf("size=%d,nr_inodes=64", size+8<<20))
	img := filepath.Join(back, "img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, size); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-b", "4096", img).CombinedOutput(); err != nil {
		t.Skipf("mkfs.ext4: %v: %s", err, out)
	}
	// mkfs leaves holes (the journal too): write every block once. Blocks
	// of a page (4096 bytes) each, so that a trim frees every free block.
	b, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(img, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).Output()
	if err != nil {
		t.Skipf("losetup: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	mnt = t.TempDir()
	// No discard: blocks freed during a fault must not give the tmpfs room
	// (trim gives back the free blocks before it).
	if err := unix.Mount(dev, mnt, "ext4", 0, "errors=continue"); err != nil {
		t.Skipf("mounting ext4 on %s: %v", dev, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	// Trimmed before anything is written: blocks ext4 sets aside for
	// later writes (preallocation) are free now, and trimmed.
	trim(t, mnt)
	remount = func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount(dev, mnt, "ext4", 0, "errors=continue"); err != nil {
			t.Fatal(err)
		}
	}
	return mnt, back, remount
}

// trim writes back the filesystem at mnt and discards its free blocks.
func trim(t *testing.T, mnt string) {
	d, err := os.Open(mnt)
	if err != nil {
		t.Fatal(err)
	}
	// An error is one the spool met already (syncfs reports writeback
	// errors of the whole filesystem): what matters is that it wrote back.
	unix.Syncfs(int(d.Fd()))
	d.Close()
	if out, err := exec.Command("fstrim", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fstrim: %v: %s", err, out)
	}
}

func TestFsyncFailureIsCountedAndRecovered(t *testing.T) {
	mnt, back, remount := mountLoopExt4(t)
	var mend func()
	runFault(t, Options{Dir: filepath.Join(mnt, "spool"), SegmentBytes: 16 << 10, MaxBytes: 1 << 30, MaxBuffer: 8 << 10, FsyncInterval: time.Nanosecond},
		unix.ENOSPC,
		func(*Spool) {
			trim(t, mnt)
			mend = fillFS(t, back)
		},
		func() { mend() }, remount)
}
