package agent

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// scriptedClocks is a machine whose MONOTONIC_RAW advances 150 ns per read and
// whose REALTIME runs at a scripted rate with scripted steps.
type scriptedClocks struct {
	raw      int64
	rtOffset float64 // REALTIME - MONOTONIC_RAW
	ratePPM  float64 // REALTIME slew relative to MONOTONIC_RAW
	last     int64
	fail     bool
}

func (s *scriptedClocks) read(c timebase.SystemClock) (int64, error) {
	if s.fail && c == timebase.Boottime {
		return 0, errors.New("boottime exploded")
	}
	s.raw += 150
	s.rtOffset += float64(s.raw-s.last) * s.ratePPM * 1e-6
	s.last = s.raw
	switch c {
	case timebase.MonotonicRaw:
		return s.raw, nil
	case timebase.Realtime:
		return s.raw + int64(s.rtOffset), nil
	case timebase.TAI:
		return s.raw + int64(s.rtOffset) + 37e9, nil
	}
	return s.raw + 5000, nil
}

func (s *scriptedClocks) advance(d time.Duration) { s.raw += int64(d) }

func kernelState() (timebase.KernelState, error) {
	return timebase.KernelState{State: 0, Status: timebase.StaPLL | timebase.StaNano, FreqPPB: -1234, TAIOffsetS: 37, TickNS: 10_000_000}, nil
}

func testClockConfig() ClockConfig {
	c := Default().Clock
	c.StepThreshold = time.Millisecond
	c.MaxSlewPPM = 500
	return c
}

func records(b *collect.Batch, meas string) []record.Record {
	var out []record.Record
	for _, r := range b.Records {
		if r.Measurement == meas {
			out = append(out, r)
		}
	}
	return out
}

func TestClockSourceDetectsStepsNotSlews(t *testing.T) {
	sc := &scriptedClocks{raw: 1e12, rtOffset: 1.7e18}
	s, err := newClockSource(testClockConfig(), sc.read, kernelState, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var steps []record.Record
	for i := 0; i < 120; i++ {
		switch {
		case i < 40:
			sc.ratePPM = 0
		case i < 80: // chronyd slewing at 400 ppm: no step
			sc.ratePPM = 400
		default:
			sc.ratePPM = 0
		}
		if i == 60 {
			sc.rtOffset += 5e6 // a 5 ms step forward
		}
		if i == 100 {
			sc.rtOffset -= 2.5e6 // and 2.5 ms back
		}
		b := &collect.Batch{Host: "h"}
		if err := s.Collect(ctx, b); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, records(b, "clock_step")...)
		if i == 0 {
			if n := len(records(b, "clock_offset")); n != 5 { // 4 clocks + TAI-UTC
				t.Fatalf("first collection has %d clock_offset records", n)
			}
			tm := records(b, "timex")
			if len(tm) != 1 || tm[0].Tag("host") != "h" {
				t.Fatalf("timex records %+v", tm)
			}
			if f, _ := tm[0].Field("tai_offset_s"); f.I != 37 {
				t.Fatalf("timex tai_offset_s %v", f)
			}
			for _, r := range records(b, "clock_offset") {
				if r.Tag("clock") == "tai" && r.Tag("ref") == "realtime" {
					if f, _ := r.Field("offset_ns"); f.I < 37e9-500 || f.I > 37e9+500 {
						t.Fatalf("TAI-UTC measured as %d ns", f.I)
					}
				}
			}
		}
		sc.advance(time.Second)
	}
	var realtimeSteps []int64
	for _, r := range steps {
		f, _ := r.Field("step_ns")
		if r.Tag("clock") == "realtime" {
			realtimeSteps = append(realtimeSteps, f.I)
		}
	}
	// REALTIME and TAI both step (TAI follows REALTIME in the kernel).
	if len(realtimeSteps) != 2 {
		t.Fatalf("realtime steps %v (all steps %d); want exactly the two injected", realtimeSteps, len(steps))
	}
	for i, want := range []int64{5e6, -2.5e6} {
		if d := realtimeSteps[i] - want; d < -5000 || d > 5000 {
			t.Errorf("step %d measured %d ns, injected %d", i, realtimeSteps[i], want)
		}
	}
}

func TestClockSourceRateIsTheFittedSlope(t *testing.T) {
	sc := &scriptedClocks{raw: 1e12, ratePPM: 12.5}
	s, _ := newClockSource(testClockConfig(), sc.read, nil, nil)
	var last record.Record
	for i := 0; i < 20; i++ {
		b := &collect.Batch{}
		if err := s.Collect(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		last = records(b, "clock_offset")[0]
		sc.advance(time.Second)
	}
	f, ok := last.Field("rate_ppb")
	if !ok || f.F < 12400 || f.F > 12600 {
		t.Fatalf("rate %v; want 12500 ppb", f)
	}
}

func TestClockSourceErrorKeepsOtherClocks(t *testing.T) {
	sc := &scriptedClocks{raw: 1e12, fail: true}
	s, _ := newClockSource(testClockConfig(), sc.read, kernelState, nil)
	b := &collect.Batch{}
	err := s.Collect(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "clock boottime: boottime exploded") {
		t.Fatalf("error %v", err)
	}
	if n := len(records(b, "clock_offset")); n != 4 {
		t.Fatalf("%d clock_offset records; the three good clocks and TAI-UTC should remain", n)
	}
}
