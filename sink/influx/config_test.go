package influx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://localhost:8086", ""},
		{"https://influx.example:443/", ""},
		{"ftp://x", "is not an http:// or https:// URL"},
		{"localhost:8086", "is not an http:// or https:// URL"},
		{"http://", "is not an http:// or https:// URL"},
		{"http://user:secret@host:8086", "holds credentials"},
	} {
		err := CheckURL(tc.url)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckURL(%q) = %v, want %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) shows the password: %v", tc.url, err)
		}
	}
}

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
