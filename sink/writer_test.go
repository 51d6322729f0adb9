package sink

import (
	"errors"
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

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestOpenFileNamesABadPath(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "ro"), 0o500)
	if os.Geteuid() == 0 {
		// root writes anywhere: a directory in the file's place fails for everyone
		os.Mkdir(filepath.Join(dir, "ro", "out.lp"), 0o755)
	}
	_, err := OpenFile(filepath.Join(dir, "ro", "out.lp"), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "output file "+filepath.Join(dir, "ro", "out.lp")) {
		t.Fatalf("unwritable path: %v", err)
	}
}

func TestMultiKeepsWritingWhenOneFails(t *testing.T) {
	var sb strings.Builder
	good := NewWriter("mem", &sb)
	m := Multi{NewWriter("bad", failWriter{}), good}
	err := m.Write([]record.Record{{Measurement: "m", Fields: []record.Field{record.Bool("b", false)}, TimeNS: 7}})
	if err == nil || !strings.Contains(err.Error(), "bad: disk on fire") {
		t.Fatalf("error %v", err)
	}
	if sb.String() != "m b=false 7\n" {
		t.Fatalf("good sink got %q", sb.String())
	}
}
