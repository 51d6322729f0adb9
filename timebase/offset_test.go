package timebase

import (
	"errors"
	"testing"
)

// reads answers each clock read from a script: the reference's reads in
// turn, the clock at 1000 ns past the reference's last.
func reads(ref []int64) func(SystemClock) (int64, error) {
	i, last := 0, int64(0)
	return func(c SystemClock) (int64, error) {
		if c != MonotonicRaw {
			return last + 1000, nil
		}
		if i == len(ref) {
			return 0, errors.New("script ended")
		}
		last, i = ref[i], i+1
		return last, nil
	}
}

// The narrowest of the brackets wins (a preempted read loses), one that went
// backwards never does, and only backwards ones are an error naming the
// reference.
func TestReadOffset(t *testing.T) {
	cases := map[string]struct {
		ref  []int64
		want Offset
		err  string
	}{
		"narrowest":         {[]int64{0, 900, 5000, 5300, 9000, 9700}, Offset{MidNS: 5150, OffsetNS: 5000 + 1000 - 5150, WindowNS: 300}, ""},
		"backwards skipped": {[]int64{100, 50, 7000, 7400, 9000, 8000}, Offset{MidNS: 7200, OffsetNS: 7000 + 1000 - 7200, WindowNS: 400}, ""},
		"all backwards":     {[]int64{100, 50, 200, 150, 300, 250}, Offset{}, "monotonic_raw went backwards in every read"},
		"read fails":        {[]int64{0, 10, 20}, Offset{}, "script ended"},
	}
	for name, tc := range cases {
		got, err := ReadOffset(reads(tc.ref), MonotonicRaw, Realtime, 3)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("%s: %+v %v, want %+v %q", name, got, err, tc.want, tc.err)
		}
	}
}

// A clock slewed at up to the allowed 500 ppm, changing its rate by up to
// that from one second to the next, is never stepped; jumps of 5 ms and
// -2.5 ms are, measured to the ns, and the rate before a step predicts the
// offsets after it.
func TestOffsetSteps(t *testing.T) {
	d := OffsetSteps{ThresholdNS: 1e6, MaxSlewPPM: 500}
	off, ratePPM := int64(0), 0.0
	var found []OffsetStep
	for i := range 60 {
		switch {
		case i == 20:
			ratePPM = 400
		case i == 30:
			off += 5e6
		case i == 40:
			off -= 2.5e6
		case i == 50:
			ratePPM = -90
		}
		off += int64(ratePPM * 1e3)
		o := Offset{MidNS: int64(i) * 1e9, OffsetNS: off, WindowNS: 200}
		if st, ok := d.Next(o); ok {
			found = append(found, st)
		}
	}
	want := []OffsetStep{
		{StepNS: 5e6, BeforeNS: 10*400e3 + 0, AfterNS: 11*400e3 + 5e6, IntervalNS: 1e9},
		{StepNS: -2.5e6, BeforeNS: 20*400e3 + 5e6, AfterNS: 21*400e3 + 2.5e6, IntervalNS: 1e9},
	}
	if len(found) != len(want) || found[0] != want[0] || found[1] != want[1] {
		t.Errorf("steps %+v, want %+v", found, want)
	}
}
