package sink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/record"
)

func TestFileSinkAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "out.lp")
	for i := 0; i < 2; i++ {
		s, err := OpenFile(path, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write([]record.Record{{Measurement: "m", Fields: []record.Field{record.Int("i", int64(i))}, TimeNS: int64(i)}}); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if st := s.Stats(); st.Written != 1 || st.Bytes != 9 {
			t.Fatalf("stats %+v", st)
		}
	}
	b, _ := os.ReadFile(path)
	if string(b) != "m i=0i 0\nm i=1i 1\n" {
		t.Fatalf("file holds %q", b)
	}
}

func TestOpenFileNamesABadPath(t *testing.T) {
	dir := t.TempDir()
	// A directory in the file's place fails for everyone, root included.
	bad := filepath.Join(dir, "out.lp")
	os.Mkdir(bad, 0o755)
	_, err := OpenFile(bad, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "output file "+bad) {
		t.Fatalf("unwritable path: %v", err)
	}
}
