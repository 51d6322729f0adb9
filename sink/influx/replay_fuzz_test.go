package influx

import (
	"bytes"
	"testing"
)

// FuzzCheckLines: the dead-letter file's check never panics, and what it
// accepts is lines each of which checks alone, and what it refuses names a
// line that does not.
func FuzzCheckLines(f *testing.F) {
	for _, s := range []string{"# c\nm v=1i 1\n", "m,t=a v=\"x\" 2\n\nm v=1.5\n", "hello world\n", "m v=", "m,=x v=1 1", "m v=1i 1 2\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkLines(b)
		bad := false
		for _, l := range bytes.Split(b, []byte("\n")) {
			if tl := bytes.TrimSpace(l); len(tl) == 0 || tl[0] == '#' {
				continue
			}
			if checkLine(l) != nil {
				bad = true
			}
		}
		if (err != nil) != bad {
			t.Fatalf("checkLines %v, but a line alone is bad: %v", err, bad)
		}
	})
}
