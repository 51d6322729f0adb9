package agent

import (
	"os"
	"regexp"
	"testing"
)

// TestConfigurationDocNamesRealFiles keeps docs/configuration.md's file
// table true to the tree: every agent/*.go it names exists.
func TestConfigurationDocNamesRealFiles(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	names := regexp.MustCompile("`(agent/[a-z0-9_]+\\.go)`").FindAllSubmatch(doc, -1)
	if len(names) < 20 {
		t.Fatalf("docs/configuration.md names %d agent files, want its file table (20 or more)", len(names))
	}
	placeholder := regexp.MustCompile(`_x[._]`) // the recipe's source "x"
	for _, m := range names {
		if placeholder.Match(m[1]) {
			continue
		}
		if _, err := os.Stat("../" + string(m[1])); err != nil {
			t.Errorf("docs/configuration.md names %s, which is not in the tree", m[1])
		}
	}
}
