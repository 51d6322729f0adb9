package conf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("user:pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONAGENT_TEST_TOKEN", "from-env")
	for _, tc := range []struct{ file, env, want string }{
		{file, "MONAGENT_TEST_TOKEN", "user:pass"},
		{"", "MONAGENT_TEST_TOKEN", "from-env"},
		{"", "", ""},
	} {
		if got, err := ReadToken(tc.file, tc.env); err != nil || got != tc.want {
			t.Errorf("ReadToken(%q, %q) = %q, %v; want %q", tc.file, tc.env, got, err, tc.want)
		}
	}
	missing := filepath.Join(dir, "none")
	_, err := ReadToken(missing, "")
	if !errors.Is(err, os.ErrNotExist) || PathReason(err) != missing+": no such file or directory" {
		t.Errorf("a missing file: %v (%q)", err, PathReason(err))
	}
}
