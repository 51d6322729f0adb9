package agent

import (
	"log/slog"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
)

// Each receiver's judged clock counts the messages the source's ring could
// not hold in its events_lost (the LOST column; it was 0 for gnss).
func TestGNSSReceiverCountsTheRingsLosses(t *testing.T) {
	c := Default().GNSS
	c.Enabled, c.Judge.Enabled = true, true
	g := judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)})
	s := newGNSSSource(c, slog.New(slog.DiscardHandler), nil)
	if err := s.judge(g, c); err != nil {
		t.Fatal(err)
	}
	s.ringDropped = func() uint64 { return 5 }
	s.deviceOf("/dev/ttyS0")
	s.deviceOf("/dev/ttyS1")
	st := g.Status(time.Now().UnixNano())
	if len(st.Clocks) != 2 {
		t.Fatalf("%d judged clocks, want one per receiver", len(st.Clocks))
	}
	for _, cl := range st.Clocks {
		if cl.EventsLost != 5 {
			t.Errorf("%s: events_lost %d, want the ring's 5", cl.Source, cl.EventsLost)
		}
	}
}
