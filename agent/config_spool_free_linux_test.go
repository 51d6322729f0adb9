package agent

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// config check warns when spool.max_bytes is more than the spool's
// filesystem can hold (before: silence, and a full disk later).
func TestSpoolMaxBytesBeyondFreeSpaceWarns(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Skipf("statfs cannot tell the free space here: %v", err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	for _, c := range []struct {
		max  int64
		warn bool
	}{{free + 64<<30, true}, {16 << 20, false}} {
		cfg, err := Parse("x.yaml", []byte("spool:\n  dir: "+dir+"/not/yet\n  max_bytes: "+strconv.FormatInt(c.max, 10)+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		var warned bool
		board := cfg.Board()
		for _, w := range board {
			warned = warned || strings.Contains(w.Error(), "spool.max_bytes") && strings.Contains(w.Error(), "free on the filesystem of "+dir)
		}
		if warned != c.warn {
			t.Errorf("max_bytes %d (free %d): warned %v, want %v: %v", c.max, free, warned, c.warn, board)
		}
	}
}
