package agent

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The agent makes the segment at timeapi.path; a second agent on the same
// path gets a clear error naming timeapi.path.
func TestTimeAPISegmentAtItsPath(t *testing.T) {
	cfg := Default()
	cfg.Paths.RuntimeDir = t.TempDir()
	p, err := openTimePub(&cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(quietLog())
	if got, want := cfg.TimeAPIPath(), filepath.Join(cfg.Paths.RuntimeDir, "time.shm"); got != want {
		t.Errorf("segment at %s, want %s", got, want)
	}
	if _, err := openTimePub(&cfg, nil, nil); err == nil || !strings.Contains(err.Error(), "timeapi.path") {
		t.Errorf("second agent on one segment: %v, want an error at timeapi.path", err)
	}
}

// The timeapi section's problems name their keys.
func TestTimeAPIConfigChecks(t *testing.T) {
	for _, tc := range []struct{ yaml, key string }{
		{"timeapi:\n  path: \"\"\n", "timeapi.path"},
		{"timeapi:\n  mode: \"999\"\n", "timeapi.mode"},
		{"timeapi:\n  mode: \"0200\"\n", "timeapi.mode"},
		{"timeapi:\n  max_age: 100ms\n", "timeapi.max_age"},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != tc.key {
			t.Errorf("%q: %v, want a problem at %s", tc.yaml, err, tc.key)
		}
	}
	if _, err := Parse("x.yaml", []byte("timeapi:\n  enabled: false\n  max_age: 1ms\n")); err != nil {
		t.Errorf("off: %v", err)
	}
	if d := Default().TimeAPI; !d.Enabled || d.Path != "time.shm" || d.Mode != "0644" || d.MaxAge != 10*time.Second {
		t.Errorf("defaults %+v", d)
	}
}
