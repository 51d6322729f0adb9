package gnss

import (
	"math"
	"strconv"
	"testing"
)

// A Referee's verdicts, message by message (stale 3 s, latency 20 µs, PPS
// the reference unless said): a TPV is remembered per device, a reference
// message is a sample once the device has a TPV, and the other class, with
// the reference quiet for more than stale, is a missed sample.
func TestRefereeVerdicts(t *testing.T) {
	const (
		s       = int64(1_800_000_000e9)
		stale   = int64(3e9)
		latency = int64(20_000)
	)
	tpv := func(dev string, mode Mode) Message { return Message{Class: ClassTPV, Device: dev, Mode: mode} }
	ref := func(c Class, dev string, off int64) Message {
		return Message{Class: c, Device: dev, RealNS: s, ClockNS: s + off}
	}
	type step struct {
		m       Message
		read, t int64
		want    Verdict
	}
	sample := func(t int64, synced bool, off int64) Verdict {
		return Verdict{Kind: VerdictSample, TimeNS: t, Synced: synced, OffsetNS: off, BoundNS: max(off, -off) + latency}
	}
	for _, tc := range []struct {
		name      string
		reference Class
		steps     []step
	}{
		{"no TPV yet", ClassPPS, []step{
			{ref(ClassPPS, "a", 5), s, s, Verdict{}},
			{Message{Class: ClassSKY, Device: "a"}, s, s, Verdict{}},
			{ref(ClassPPS, "a", 5), s + 1e9, s + 1e9, Verdict{}},
		}},
		{"3D fix fresh: synced", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{ref(ClassPPS, "a", -3_000), s + 1e9, s + stale, sample(s+stale, true, -3_000)},
		}},
		{"2D fix: not synced", ClassPPS, []step{
			{tpv("a", Mode2D), s, s, Verdict{}},
			{ref(ClassPPS, "a", 7_000), s + 1e9, s + 1e9, sample(s+1e9, false, 7_000)},
		}},
		{"stale TPV: not synced", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{ref(ClassPPS, "a", 1_000), s + stale + 1, s + stale + 1, sample(s+stale+1, false, 1_000)},
		}},
		{"TOFF the reference", ClassTOFF, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{ref(ClassPPS, "a", 0), s + 1e9, s + 1e9, Verdict{}},
			{ref(ClassTOFF, "a", 2e8), s + 1e9, s + 1e9, sample(s+1e9, true, 2e8)},
		}},
		{"TOFF with PPS quiet over stale: missed", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{ref(ClassTOFF, "a", 1e8), s + 1e9, s + 1e9, Verdict{}},
			{ref(ClassTOFF, "a", 1e8), s + 1e9 + stale, s + 1e9 + stale, Verdict{}},
			{ref(ClassTOFF, "a", 1e8), s + 2e9 + stale, s + 2e9 + stale, Verdict{Kind: VerdictMissed, TimeNS: s + 2e9 + stale}},
			{ref(ClassPPS, "a", 0), s + 3e9 + stale, s + 3e9 + stale, sample(s+3e9+stale, false, 0)},
			{ref(ClassTOFF, "a", 1e8), s + 4e9 + stale, s + 4e9 + stale, Verdict{}},
		}},
		{"devices apart", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{ref(ClassPPS, "b", 5), s, s, Verdict{}},
			{ref(ClassTOFF, "b", 0), s, s, Verdict{}},
			{ref(ClassPPS, "a", 5), s + 1e9, s + 1e9, sample(s+1e9, true, 5)},
			{ref(ClassTOFF, "b", 0), s + 1e9 + stale, s + 1e9 + stale, Verdict{Kind: VerdictMissed, TimeNS: s + 1e9 + stale}},
			{ref(ClassTOFF, "a", 0), s + 1e9 + stale, s + 1e9 + stale, Verdict{}},
		}},
		{"a third device judges nothing (max 2)", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{tpv("b", Mode3D), s, s, Verdict{}},
			{tpv("c", Mode3D), s, s, Verdict{}},
			{ref(ClassPPS, "c", 5), s + 1e9, s + 1e9, Verdict{}},
			{ref(ClassPPS, "b", 5), s + 1e9, s + 1e9, sample(s+1e9, true, 5)},
		}},
		{"bound saturates", ClassPPS, []step{
			{tpv("a", Mode3D), s, s, Verdict{}},
			{Message{Class: ClassPPS, Device: "a", RealNS: math.MaxInt64}, s, s,
				Verdict{Kind: VerdictSample, TimeNS: s, Synced: true, OffsetNS: -math.MaxInt64, BoundNS: math.MaxInt64}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReferee(tc.reference, stale, latency, 2)
			for i, st := range tc.steps {
				if got := r.Judge(&st.m, st.read, st.t); got != st.want {
					t.Errorf("step %d (%s %s): %+v, want %+v", i, st.m.Class, st.m.Device, got, st.want)
				}
			}
		})
	}
}

// 200,000 devices, each with a TPV and a PPS, leave the Referee's tables at
// its cap: the messages of the others judge nothing and are counted.
func TestRefereeKeepsAtMostMaxDevices(t *testing.T) {
	const n, capped = 200_000, 8
	r := NewReferee(ClassPPS, 3e9, 0, capped)
	for i := range n {
		dev := "/dev/gps" + strconv.Itoa(i)
		r.Judge(&Message{Class: ClassTPV, Device: dev, Mode: Mode3D}, 1e9, 1e9)
		r.Judge(&Message{Class: ClassPPS, Device: dev, RealNS: 2e9, ClockNS: 2e9}, 2e9, 2e9)
	}
	if len(r.fix) > capped || len(r.lastRef) > capped || r.devices.Len() > capped {
		t.Errorf("after %d devices: %d fixes, %d reference times, %d names kept; want at most %d", n, len(r.fix), len(r.lastRef), r.devices.Len(), capped)
	}
	if got, want := r.Refused(), uint64(2*(n-capped)); got != want {
		t.Errorf("refused %d messages, want %d", got, want)
	}
}

// Devices admits the first names up to its cap, each for good, and counts
// every message of another.
func TestDevicesAdmitsTheFirstMax(t *testing.T) {
	d := NewDevices(2)
	for i, tc := range []struct {
		dev  string
		want bool
	}{{"a", true}, {"a", true}, {"b", true}, {"c", false}, {"a", true}, {"c", false}, {"b", true}, {"", false}} {
		if got := d.Admit(tc.dev); got != tc.want {
			t.Errorf("%d: Admit(%q) %v, want %v", i, tc.dev, got, tc.want)
		}
	}
	if d.Len() != 2 || d.Refused() != 3 {
		t.Errorf("%d admitted, %d refused; want 2, 3", d.Len(), d.Refused())
	}
	if NewDevices(0).max != 1 {
		t.Error("a cap below 1 is not 1")
	}
}
