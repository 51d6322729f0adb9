package spool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/conf"
)

// Advise warns when max_bytes is more than the filesystem's free space and
// the spool's own segments can hold, naming the nearest existing directory;
// a disabled spool or a cap that fits gets no word.
func TestConfigAdviseFreeSpace(t *testing.T) {
	dir := t.TempDir()
	// A sparse segment: 64 GiB the spool holds, whatever the disk's size.
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000001.seg"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "00000000000000000001.seg"), 64<<30); err != nil {
		t.Skipf("no sparse 64 GiB segment here: %v", err)
	}
	free, at, ok := freeBytes(filepath.Join(dir, "not", "yet"))
	if !ok || at != dir {
		t.Skipf("statfs cannot tell the free space here (%s, %v)", at, ok)
	}
	for _, c := range []struct {
		enabled bool
		max     int64
		want    string
	}{
		{true, free + 256<<30, "spool.max_bytes: " + conf.MiB(free+256<<30) + " is more than the "},
		{false, free + 256<<30, ""},
		{true, 16 << 20, ""},
	} {
		s := Config{Enabled: c.enabled, Dir: filepath.Join(dir, "not", "yet"), MaxBytes: c.max}
		var p conf.List
		s.Advise(&p)
		got := p.Problems.Error()
		if c.want == "" && len(p.Problems) != 0 || c.want != "" && (len(p.Problems) != 1 || !strings.Contains(got, c.want) ||
			!strings.Contains(got, " free on the filesystem of "+dir+": the disk fills")) {
			t.Errorf("enabled %v, max_bytes %d (free %d): %q, want %q", c.enabled, c.max, free, got, c.want)
		}
	}
	// What the spool holds counts as room: a cap within it and the free
	// space gets no word, one beyond names it.
	for _, c := range []struct {
		max  int64
		want string
	}{{free + 32<<30, ""}, {free + 128<<30, " (with the spool's own 65536.0 MiB)"}} {
		s := Config{Enabled: true, Dir: dir, MaxBytes: c.max}
		var p conf.List
		s.Advise(&p)
		if got := p.Problems.Error(); (c.want == "") != (len(p.Problems) == 0) || !strings.Contains(got, c.want) {
			t.Errorf("max_bytes %d beside a 64 GiB segment (free %d): %q, want %q", c.max, free, got, c.want)
		}
	}
}
