package spool

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A spool directory others may read that cannot be narrowed (here on a
// read-only filesystem) stops Open with an error naming it.
func TestWideSpoolDirThatCannotBeNarrowedIsRefused(t *testing.T) {
	mnt := mountTmpfs(t, "size=64k")
	dir := filepath.Join(mnt, "spool")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Skipf("cannot remount the tmpfs read-only: %v", err)
	}
	s, err := Open(Options{Dir: dir, DeferFlush: true})
	if err == nil {
		s.Close()
		t.Fatal("a spool directory others may read and the agent cannot narrow was accepted")
	}
	if !errors.Is(err, unix.EROFS) || !strings.Contains(err.Error(), "lets other users read the spool") {
		t.Fatalf("error %q does not say the directory cannot be narrowed", err)
	}
}
