package spool

import "golang.org/x/sys/unix"

// freeBytes is the space an unprivileged writer may still take on the
// filesystem that holds dir (or would: its nearest existing parent), and
// that place; ok false when it cannot be told.
func freeBytes(dir string) (free int64, at string, ok bool) {
	at = existingAncestor(dir)
	var st unix.Statfs_t
	if err := unix.Statfs(at, &st); err != nil {
		return 0, at, false
	}
	return int64(st.Bavail) * int64(st.Bsize), at, true
}
