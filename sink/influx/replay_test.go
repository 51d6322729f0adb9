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
