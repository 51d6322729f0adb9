package influx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/sink/spool"
)

// Issue 10 item 4: dead-lettered lines go back into the spool once, and the
// shipper delivers them.
func TestReplayDeadLetter(t *testing.T) {
	dir := t.TempDir()
	sp, err := spool.Open(spool.Options{Dir: dir, FlushInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	dl := filepath.Join(dir, "deadletter.lp")
	os.WriteFile(dl, []byte("# 2026-01-01T00:00:00Z rejected: unauthorized\nm v=\"1\" 1\nm v=\"2\" 2\n# 2026-01-01T00:00:01Z rejected: x\nm v=\"3\" 3\n"), 0o644)
	dry, err := ReplayDeadLetter(sp, dl, true, time.Now())
	if err != nil || dry.Lines != 3 || dry.MovedTo != "" || sp.Stats().Appended != 0 {
		t.Fatalf("dry run %+v %v, spool %+v", dry, err, sp.Stats())
	}
	res, err := ReplayDeadLetter(sp, dl, false, time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC))
	if err != nil || res.Lines != 3 || !strings.HasPrefix(res.MovedTo, dl+".replayed-20261123T100000") {
		t.Fatalf("replay %+v %v", res, err)
	}
	if _, err := os.Stat(dl); !os.IsNotExist(err) {
		t.Fatalf("dead-letter file still there: %v", err)
	}
	again, err := ReplayDeadLetter(sp, dl, false, time.Now())
	if err != nil || again.Lines != 0 {
		t.Fatalf("second replay %+v %v", again, err)
	}
	srv := &scripted{}
	sh := newShipper(Config{URL: "x", Bucket: "b", BatchInterval: 5 * time.Millisecond, MinBackoff: time.Millisecond}, spoolQueue{sp}, srv)
	runUntil(t, sh, func() bool { return sp.Stats().Acknowledged == 3 })
	for _, l := range []string{`m v="1" 1`, `m v="2" 2`, `m v="3" 3`} {
		if srv.got[l] != 1 {
			t.Fatalf("server got %v", srv.got)
		}
	}
}

// A file with a line that is not line protocol (edited by hand, or not a
// dead-letter file) is refused whole, naming the line, and nothing is queued
// (before: every line went into the spool, for InfluxDB to reject again).
func TestReplayRefusesWhatIsNotLineProtocol(t *testing.T) {
	for _, bad := range []string{"hello world", "m", "m v=", "m,t v=1i notatime", "{\"json\": 1}"} {
		dir := t.TempDir()
		sp, err := spool.Open(spool.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		dl := filepath.Join(dir, "deadletter.lp")
		os.WriteFile(dl, []byte("# 2026-01-01T00:00:00Z rejected: x\nm v=1i 1\n"+bad+"\nm v=2i 2\n"), 0o644)
		for _, dry := range []bool{true, false} {
			res, err := ReplayDeadLetter(sp, dl, dry, time.Now())
			if err == nil || !strings.Contains(err.Error(), "line 3 is not line protocol") || res.Lines != 0 {
				t.Errorf("%q (dry %v): %+v %v", bad, dry, res, err)
			}
		}
		if st := sp.Stats(); st.Appended != 0 {
			t.Errorf("%q: %d points queued", bad, st.Appended)
		}
		if _, err := os.Stat(dl); err != nil {
			t.Errorf("%q: the file was moved: %v", bad, err)
		}
		sp.Close()
	}
}
