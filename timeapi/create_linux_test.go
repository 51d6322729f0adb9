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
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "time.shm")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if w, err := Create(link, 0o644, []string{"system"}); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		if w != nil {
			w.Close()
		}
		t.Fatalf("Create through a symbolic link: %v, want refused", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me" {
		t.Fatalf("the link's target was written: %q", b)
	}
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
	if w, err := Create(theirs, 0o644, []string{"system"}); err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		if w != nil {
			w.Close()
		}
		t.Fatalf("Create on another user's file: %v, want refused", err)
	}
	if b, _ := os.ReadFile(theirs); string(b) != "theirs" {
		t.Fatalf("another user's file was written: %q", b)
	}
}
