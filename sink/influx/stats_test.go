package influx

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

// The summary says what was delivered; while writes fail, since when and
// why; and where dead-lettered lines wait, once there are some.
func TestShipperSummary(t *testing.T) {
	recs := []record.Record{point(0, "v"), point(1, "bad"), point(2, "v")}
	sp, sh := shipWith(t, &fakeServer{}, Config{URL: "x", Bucket: "b"}, recs)
	runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == 3 })
	st := sh.Stats()
	want := fmt.Sprintf("InfluxDB: 2 points in %d batches, %d retries, state ok; 1 dead-lettered lines in %s ('monagent spool replay-deadletter' ships them again once fixed)",
		st.Batches, st.Retries, filepath.Join(sp.Dir(), "deadletter.lp"))
	if got := sh.Summary(); got != want {
		t.Fatalf("summary %q\nwant %q", got, want)
	}

	_, sh = shipWith(t, &fakeServer{failFirst: 1 << 30, failStatus: 503}, Config{URL: "x", Bucket: "b"}, recs)
	runUntil(t, sh, func() bool { return sh.Stats().Retries > 0 })
	st = sh.Stats()
	want = fmt.Sprintf("InfluxDB: 0 points in 0 batches, %d retries, state %s since %s (last HTTP status 503: %s)",
		st.Retries, st.State, time.Unix(0, st.OutageStartNS).UTC().Format(time.RFC3339), st.LastError)
	if got := sh.Summary(); got != want || st.State == StateOK {
		t.Fatalf("summary %q\nwant %q", got, want)
	}
}

// consecutive_failures is a level (a gauge on /metrics); the counts are not.
func TestStatsLevelsDeclared(t *testing.T) {
	for _, f := range (Stats{}).Fields() {
		if want := f.Key == "consecutive_failures"; f.Level != want {
			t.Errorf("field %s: level %v, want %v", f.Key, f.Level, want)
		}
	}
}
