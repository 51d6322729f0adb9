//go:build unix

package spool

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Issue 33 item 2: the spool's directory is its owner's alone (0700) and so
// is every file in it (0600), whatever the umask; a directory others may read
// is narrowed at open.
func TestSpoolFilesAreTheOwnersAlone(t *testing.T) {
	old := syscall.Umask(0) // nothing narrows what the spool asks for
	defer syscall.Umask(old)
	parent := filepath.Join(t.TempDir(), "data")
	dir := filepath.Join(parent, "spool")
	s := open(t, Options{Dir: dir, SegmentBytes: 4096, DeferFlush: true})
	s.Append(recs(0, 500)) // several segments
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	r := s.NewReader()
	_, last := drain(t, r)
	r.Close()
	if err := s.Ack(Batch{FirstSeq: 1, LastSeq: last.LastSeq - 10, Points: int(last.LastSeq - 10)}, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil { // writes the ack file
		t.Fatal(err)
	}
	checkMode(t, parent, 0o755)
	checkMode(t, dir, 0o700)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		kind := e.Name()
		if _, ok := parseSegName(kind); ok {
			kind = "segment"
		}
		seen[kind] = true
		checkMode(t, filepath.Join(dir, e.Name()), 0o600)
	}
	for _, want := range []string{"segment", "ack", "lock"} {
		if !seen[want] {
			t.Fatalf("no %s file in %v", want, ents)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWideSpoolDirIsNarrowed(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "spool")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	s := open(t, Options{Dir: dir, DeferFlush: true})
	defer s.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o700 || fi.Mode()&fs.ModeSetgid == 0 {
		t.Fatalf("spool directory mode %v after open, want drwx------ keeping setgid", fi.Mode())
	}
}

// checkMode fails the test unless path's permission bits are want.
func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Fatalf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
	}
}
