package spool

import (
	"fmt"
	"testing"
)

// The summary names acknowledgements, pending and dead-lettered points only
// when something reads the spool.
func TestSummary(t *testing.T) {
	dir := t.TempDir()
	s := open(t, Options{Dir: dir})
	if err := s.Append(recs(0, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	on := s.Stats().Bytes
	if got, want := s.Summary(""), fmt.Sprintf("spool %s: 3 points appended, 0 dropped (cap 0, buffer 0, corrupt 0, disk 0), %d bytes on disk", dir, on); got != want {
		t.Fatalf("summary %q\nwant %q", got, want)
	}
	want := fmt.Sprintf("spool %s: 3 points appended, 0 acknowledged by InfluxDB, 3 pending, 0 dropped (cap 0, buffer 0, corrupt 0, disk 0), 0 dead-lettered, %d bytes on disk", dir, on)
	if got := s.Summary("InfluxDB"); got != want {
		t.Fatalf("summary %q\nwant %q", got, want)
	}
}

// The levels among the spool's fields are declared so (a gauge on /metrics),
// the counts are not.
func TestStatsLevelsDeclared(t *testing.T) {
	for _, f := range (Stats{}).Fields() {
		if want := f.Key == "pending" || f.Key == "buffered"; f.Level != want {
			t.Errorf("field %s: level %v, want %v", f.Key, f.Level, want)
		}
	}
}
