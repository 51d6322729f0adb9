package timeapi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Create never writes through a symbolic link, nor into another user's
// file: a segment under a shared /tmp cannot be turned against a file the
// agent (often root) could write.
func TestCreateRefusesLinksAndOthersFiles(t *testing.T) {
	dir := t.TempDir()
	// refused: Create at path fails saying want, and file still holds what
	// it held.
	refused := func(path, want, file, held string) {
		t.Helper()
		if w, err := Create(path, 0o644, []string{"system"}); err == nil || !strings.Contains(err.Error(), want) {
			if w != nil {
				w.Close()
			}
			t.Fatalf("Create at %s: %v, want refused (%s)", path, err, want)
		}
		if b, _ := os.ReadFile(file); string(b) != held {
			t.Fatalf("%s was written: %q", file, b)
		}
	}
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "time.shm")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	refused(link, "symbolic link", victim, "keep me")
	if os.Geteuid() != 0 {
		t.Log("not root: another user's file cannot be made here; that half is skipped")
		return
	}
	theirs := filepath.Join(dir, "theirs.shm")
	if err := os.WriteFile(theirs, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	refused(theirs, "owned by uid 65534", theirs, "theirs")
}
