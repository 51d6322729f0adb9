package gnss

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestGpsdClientAgainstGpsfake reads Debian's gpsd 3.22 fed by gpsfake
// from an NMEA log of two epochs without a fix and six with a 3D fix: gpsd
// answers the WATCH with VERSION, DEVICES and WATCH (pps on), then sends
// TPV with mode 3 and the epochs' times, SKY with 10 seen and 8 used, and a
// TOFF per epoch whose real time is an epoch's and whose clock stamp is
// this host's REALTIME when gpsd read the sentence; nothing is garbage.
// A second after the log is done gpsfake stops gpsd and Next says the
// connection closed. gpsfake's
// pty has no PPS line, so no PPS message comes.
func TestGpsdClientAgainstGpsfake(t *testing.T) {
	start := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second)
	const epochs, noFix = 8, 2
	g := testbed.StartGpsfake(t, testbed.NMEAFix(start, epochs, noFix), time.Second/6)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c, err := Dial(ctx, g.Addr, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	count := map[Class]int{}
	first, last := start.UnixNano(), start.Add(epochs*time.Second).UnixNano()
	begin := time.Now().UnixNano()
	var m Message
	for {
		at, err := c.Next(&m)
		if err != nil {
			if errors.As(err, new(*LineError)) {
				t.Errorf("%v", err)
				continue
			}
			if !strings.Contains(err.Error(), "connection closed") {
				t.Errorf("the feed ended: %v, want gpsd closing the connection", err)
			}
			t.Logf("the feed ended: %v", err)
			break
		}
		count[m.Class]++
		switch m.Class {
		case ClassWatch:
			t.Logf("WATCH: %s", m.Text)
		case ClassTPV:
			if m.Has&HasTime != 0 && (m.TimeNS < first || m.TimeNS >= last || m.TimeNS%1e9 != 0) {
				t.Errorf("TPV time %d is no epoch of the log [%d, %d)", m.TimeNS, first, last)
			}
			if m.Mode == Mode3D {
				count[99]++
			}
		case ClassSKY:
			if m.Has&HasSeen == 0 || m.Seen != testbed.NMEASeen && m.Seen != testbed.NMEASeenNoFix || m.Has&HasUsed != 0 && m.Used != 0 && m.Used != testbed.NMEAUsed {
				t.Errorf("SKY: seen %d, used %d (has %b)", m.Seen, m.Used, m.Has)
			}
			if m.Used == testbed.NMEAUsed {
				count[98]++
			}
		case ClassTOFF:
			if m.RealNS < first || m.RealNS >= last || m.RealNS%1e9 != 0 {
				t.Errorf("TOFF real %d is no epoch of the log", m.RealNS)
			}
			if m.ClockNS < begin || m.ClockNS > at {
				t.Errorf("TOFF clock %d not between the connect %d and the line's read %d", m.ClockNS, begin, at)
			}
			t.Logf("TOFF %s: real %d clock %d: clock − real %d ns", m.Device, m.RealNS, m.ClockNS, m.OffsetNS())
		}
	}
	t.Logf("classes: %v; lines %d, garbage %d, unknown %d", count, c.Lines(), c.Garbage(), c.Unknown())
	if count[ClassVersion] != 1 || count[ClassDevices] != 1 || count[ClassWatch] != 1 {
		t.Errorf("VERSION, DEVICES, WATCH: %d, %d, %d; want one each", count[ClassVersion], count[ClassDevices], count[ClassWatch])
	}
	if count[99] < 3 || count[98] < 3 || count[ClassTOFF] < 3 || count[ClassPPS] != 0 {
		t.Errorf("3D TPVs %d, SKYs with 8 used %d, TOFFs %d (want 3 or more each), PPS %d (want none from a pty)", count[99], count[98], count[ClassTOFF], count[ClassPPS])
	}
	if c.Garbage() != 0 || c.Unknown() != 0 {
		t.Errorf("garbage %d, unknown %d", c.Garbage(), c.Unknown())
	}
	if t.Failed() {
		t.Log(g.Output())
	}
}
