package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/monagent/monagent/sink/spool"
	"github.com/monagent/monagent/sink/spool/spooltest"
)

func TestSpoolReplayDeadLetter(t *testing.T) {
	dir := t.TempDir()
	spoolDir := filepath.Join(dir, "spool")
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte("spool:\n  enabled: true\n  dir: "+spoolDir+"\n"), 0o644)
	os.MkdirAll(spoolDir, 0o755)
	dl := filepath.Join(spoolDir, "deadletter.lp")
	os.WriteFile(dl, []byte("# t rejected: 401\nm v=1i 1\nm v=2i 2\n"), 0o644)

	var out bytes.Buffer
	if err := replayDeadLetter(&out, cfg, true); err != nil || !strings.Contains(out.String(), "2 lines would be queued") {
		t.Fatalf("dry run: %v %q", err, out.String())
	}
	out.Reset()
	if err := replayDeadLetter(&out, cfg, false); err != nil || !strings.Contains(out.String(), "queued 2 lines") {
		t.Fatalf("replay: %v %q", err, out.String())
	}
	if !strings.Contains(out.String(), "enables no influx section") {
		t.Errorf("no warning that nothing will ship the lines: %q", out.String())
	}
	if m, _ := filepath.Glob(dl + ".replayed-*"); len(m) != 1 {
		t.Fatalf("moved-aside files %v", m)
	}
	out.Reset()
	if err := replayDeadLetter(&out, cfg, false); err != nil || !strings.Contains(out.String(), "nothing to replay") {
		t.Fatalf("second replay: %v %q", err, out.String())
	}
	out.Reset()
	if err := spoolStats(&out, cfg); err != nil || !strings.Contains(out.String(), "2 points pending") {
		t.Fatalf("stats: %v %q", err, out.String())
	}
	// While the agent holds the spool, a replay is refused.
	sp, err := spool.Open(spool.Options{Dir: spoolDir})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	if err := replayDeadLetter(&out, cfg, false); !errors.Is(err, spool.ErrLocked) {
		t.Fatalf("replay with the spool in use: %v", err)
	}
	var ue usageError
	if err := spoolCmd([]string{"replay-deadletter"}); !errors.As(err, &ue) {
		t.Fatalf("no --config: %v", err)
	}
	if err := spoolCmd([]string{"bogus", "--config", cfg}); !errors.As(err, &ue) {
		t.Fatalf("unknown subcommand: %v", err)
	}
}

// Issue 20 item 13: 'spool stats' runs beside the agent (which holds the
// spool's lock) and changes no file of the spool, nor after the agent ends.
func TestSpoolStatsBesideTheAgentChangesNothing(t *testing.T) {
	dir := t.TempDir()
	spoolDir := filepath.Join(dir, "spool")
	cfg := filepath.Join(dir, "agent.yaml")
	os.WriteFile(cfg, []byte("spool:\n  enabled: true\n  dir: "+spoolDir+"\n"), 0o644)
	sp, err := spool.Open(spool.Options{Dir: spoolDir, SegmentBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		sp.AppendLines([]byte(strings.Repeat("m v=1i 1\n", 10)))
		if err := sp.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string) {
		t.Helper()
		before := spooltest.Files(t, spoolDir)
		var out bytes.Buffer
		if err := spoolStats(&out, cfg); err != nil {
			t.Fatalf("spool stats %s: %v", when, err)
		}
		if !strings.Contains(out.String(), "300 points pending") {
			t.Fatalf("spool stats %s: %q", when, out.String())
		}
		if after := spooltest.Files(t, spoolDir); !reflect.DeepEqual(before, after) {
			t.Fatalf("spool stats %s changed the spool:\nbefore %v\nafter  %v", when, before, after)
		}
	}
	check("beside the agent")
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	check("after the agent")
}

// 'spool stats' on a directory that is no spool says so (before: "0 points
// pending in 0 segments", as for an empty spool), as on a missing one.
func TestSpoolStatsOnWhatIsNoSpool(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("hi"), 0o644)
	empty := filepath.Join(dir, "empty")
	os.MkdirAll(empty, 0o755)
	for _, c := range []struct{ dir, want string }{
		{other, "is not a spool"},
		{filepath.Join(dir, "missing"), "no spool at"},
		{empty, "0 points pending in 0 segments"},
	} {
		cfg := filepath.Join(dir, "agent.yaml")
		os.WriteFile(cfg, []byte("spool:\n  dir: "+c.dir+"\n"), 0o644)
		var out bytes.Buffer
		err := spoolStats(&out, cfg)
		if !strings.Contains(out.String()+fmt.Sprint(err), c.want) {
			t.Errorf("%s: %v %q, want %q", c.dir, err, out.String(), c.want)
		}
	}
}
