package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/configuration.md shows `monagent config check` as it prints today: the
// test runs it and compares (MONAGENT_UPDATE_DOCS=1 rewrites the sample). The
// files are those whose answer is the same on any machine (the board
// configurations' answers depend on the board's devices and TAI offset).
func TestConfigCheckSampleInDocs(t *testing.T) {
	args := []string{"config", "check", "configs/local.yaml", "configs/hca-cluster.yaml", "agent/testdata/config/three-errors.yaml", "missing.yaml"}
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat("/etc/monagent"); err == nil {
		t.Skip("/etc/monagent exists here: the sample's board warnings would differ")
	}
	stdout, stderr, code := run(t, root, args...)
	if code != 2 {
		t.Fatalf("config check exit %d, want 2:\n%s%s", code, stdout, stderr)
	}
	sample := "$ monagent " + strings.Join(args, " ") + "\n" + stdout + stderr
	doc := filepath.Join(root, "docs", "configuration.md")
	b, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	start := strings.Index(text, "$ monagent config check ")
	end := strings.Index(text[max(start, 0):], "```")
	if start < 0 || end < 0 {
		t.Fatalf("%s has no config check sample", doc)
	}
	end += start
	if text[start:end] == sample {
		return
	}
	if os.Getenv("MONAGENT_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(doc, []byte(text[:start]+sample+text[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the sample in %s", doc)
		return
	}
	t.Errorf("%s's config check sample is not what it prints (MONAGENT_UPDATE_DOCS=1 rewrites it):\n%s", doc, sample)
}
