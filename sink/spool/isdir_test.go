package spool

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// IsDir: a spool's files, or none yet, are a spool; a missing directory or
// one of other files is not, said with its path.
func TestIsDir(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, files ...string) string {
		d := filepath.Join(dir, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	for _, d := range []string{mk("empty"), mk("locked", "lock"), mk("acked", "ack"), mk("seg", "00000000000000000001.seg")} {
		if err := IsDir(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
	if err := IsDir(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("a missing directory: %v", err)
	}
	other := mk("other", "a.txt", "b.yaml")
	if err := IsDir(other); err == nil || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), "2 entries") {
		t.Errorf("a directory of other files: %v", err)
	}
}
