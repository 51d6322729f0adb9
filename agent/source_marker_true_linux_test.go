package agent

import (
	"testing"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
)

// fixedTime is a time API reader that answers one interval.
type fixedTime timeapi.Interval

func (f fixedTime) Now(string) (timeapi.Interval, error) { return timeapi.Interval(f), nil }

// An application stamps its event with the time API's interval
// (marker.Client.SendTrue): the record carries the interval's midpoint and
// half-width as the application read them, utc_ns and utc_bound_ns for
// section system, global_ns and global_bound_ns for global (the agent's own
// placement of the marker's stamp then stands aside).
func TestMarkerSourceShipsTrueStamps(t *testing.T) {
	f := newMarkerFixture(t, fakeModels(false), 100)
	g := hca.NewGlobal(0, 0)
	g.Set(timebase.LinearModel{Intercept: 1000}, 1)
	f.d.global = g
	c, err := marker.Dial(f.path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := f.s.Queue().Received() + 2
	if err := c.SendTrue(marker.Marker{Name: "step_utc"}, fixedTime{EarliestNS: 1_700_000_000_000_000_100, LatestNS: 1_700_000_000_000_000_301}, "system"); err != nil {
		t.Fatal(err)
	}
	if err := c.SendTrue(marker.Marker{Name: "step_global"}, fixedTime{EarliestNS: 5_000, LatestNS: 7_000}, "global"); err != nil {
		t.Fatal(err)
	}
	f.wait(want)
	recs := collectAll(t, f.s)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		switch r.Tag("name") {
		case "step_utc":
			if mid, b := intField(t, r, "utc_ns"), intField(t, r, "utc_bound_ns"); mid-b > 1_700_000_000_000_000_100 || mid+b < 1_700_000_000_000_000_301 || b != 101 {
				t.Errorf("utc_ns %d ± %d: want the read [..100, ..301]", mid, b)
			}
			if _, ok := r.Field("hca_local_ns"); !ok {
				t.Errorf("a marker without a global stamp is placed by the agent: %+v", r.Fields)
			}
		case "step_global":
			if mid, b := intField(t, r, "global_ns"), intField(t, r, "global_bound_ns"); mid != 6_000 || b != 1_000 {
				t.Errorf("global_ns %d ± %d, want the sender's 6000 ± 1000", mid, b)
			}
			if s, _ := r.Field("global_stamp"); s.S != "sender" {
				t.Errorf("global_stamp %+v, want sender", s)
			}
			if _, ok := r.Field("hca_local_ns"); ok {
				t.Errorf("the agent placed a marker the sender stamped on the global timeline: %+v", r.Fields)
			}
		default:
			t.Errorf("record %+v", r)
		}
	}
}
