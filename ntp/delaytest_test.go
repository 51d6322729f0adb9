package ntp

import "testing"

func TestDelayTest(t *testing.T) {
	var d DelayTest
	jitter := []int64{5000, 5300, 4800, 5100, 4900, 5200, 5000, 4700}
	for i, v := range jitter {
		if d.Check(v) {
			t.Fatalf("steady delay %d (sample %d) flagged", v, i)
		}
	}
	// The CI run's spike: 41 us against ~5 us.
	if !d.Check(41100) {
		t.Fatal("41 us spike among 5 us delays not flagged")
	}
	// A spike does not widen the spread for the next one.
	if !d.Check(30000) {
		t.Fatal("second spike not flagged")
	}
	if d.Check(5400) {
		t.Fatal("ordinary delay after spikes flagged")
	}
	// A delay that rose for good is accepted once the old minimum leaves the window.
	accepted := -1
	for i := 0; i < 3*delayWindow; i++ {
		if !d.Check(60000 + int64(i%3)*100) {
			accepted = i
			break
		}
	}
	if accepted < 0 || accepted > delayWindow {
		t.Fatalf("new delay level accepted after %d samples, want within %d", accepted, delayWindow)
	}
}

func TestDelayTestNeedsHistoryAndCanBeOff(t *testing.T) {
	var d DelayTest
	for i, v := range []int64{1000, 1000, 1000, 900000} {
		if d.Check(v) {
			t.Fatalf("sample %d flagged with only %d before it", i, i)
		}
	}
	off := DelayTest{Ratio: -1}
	for i := 0; i < 10; i++ {
		off.Check(1000)
	}
	if off.Check(1e9) {
		t.Fatal("test flagged with Ratio < 0")
	}
	// The floor keeps identical delays from flagging a 1 ns rise.
	var f DelayTest
	for i := 0; i < 8; i++ {
		f.Check(2000)
	}
	if f.Check(2500) {
		t.Fatal("500 ns rise over a zero spread flagged: the floor is not applied")
	}
	var g DelayTest
	for i := 0; i < 8; i++ {
		g.Check(2000)
	}
	if !g.Check(3100) {
		t.Fatal("1.1 us rise (> 10 x 100 ns floor) not flagged")
	}
}

func BenchmarkDelayTest(b *testing.B) {
	var d DelayTest
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		d.Check(5000 + int64(i&255))
	}
}
