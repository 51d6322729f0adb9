package testbed

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// MountTmpfs mounts a tmpfs with the given options (e.g. "size=1m,nr_inodes=64")
// on a new temporary directory and unmounts it when the test ends: a real
// filesystem that fills up. It skips the test, saying why, without root or
// when the mount is refused.
func MountTmpfs(t testing.TB, opts string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts+",mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs (%s): %v", opts, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir
}
