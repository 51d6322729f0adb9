package gpio

import "testing"

func TestEdgeDetectDetects(t *testing.T) {
	for _, c := range []struct {
		d             EdgeDetect
		rising, falls bool
	}{
		{DetectNone, false, false},
		{DetectRising, true, false},
		{DetectFalling, false, true},
		{DetectBoth, true, true},
	} {
		if c.d.Detects(EdgeRising) != c.rising || c.d.Detects(EdgeFalling) != c.falls {
			t.Errorf("%d: rising %v falling %v, want %v %v", c.d, c.d.Detects(EdgeRising), c.d.Detects(EdgeFalling), c.rising, c.falls)
		}
	}
}

func TestDevicePath(t *testing.T) {
	for _, c := range []struct{ dev, name, want string }{
		{"/dev", "gpiochip0", "/dev/gpiochip0"},
		{"/devx", "pps1", "/devx/pps1"},
		{"/devx", "/dev/pps0", "/dev/pps0"},
		{"/devx", "sub/gpiochip1", "sub/gpiochip1"},
	} {
		if got := DevicePath(c.dev, c.name); got != c.want {
			t.Errorf("DevicePath(%q, %q) = %q, want %q", c.dev, c.name, got, c.want)
		}
	}
}

// Settings parse from the names String gives; a name that is none says
// which are.
func TestParseSettings(t *testing.T) {
	for _, c := range []EventClock{ClockMonotonic, ClockRealtime, ClockHTE} {
		if got, err := ParseEventClock(c.String()); err != nil || got != c {
			t.Errorf("ParseEventClock(%q) = %v, %v", c.String(), got, err)
		}
	}
	if d, err := ParseEdgeDetect("both"); err != nil || d != DetectBoth {
		t.Errorf("ParseEdgeDetect(both) = %v, %v", d, err)
	}
	if b, err := ParseBias("pull_down"); err != nil || b != BiasPullDown {
		t.Errorf("ParseBias(pull_down) = %v, %v", b, err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := ParseEdgeDetect("up"); return err }(), `"up": want both, falling, rising`},
		{func() error { _, err := ParseEdgeDetect(""); return err }(), `"": want both, falling, rising`},
		{func() error { _, err := ParseBias("pullup"); return err }(), `"pullup": want as_is, disabled, pull_down, pull_up`},
		{func() error { _, err := ParseEventClock("tai"); return err }(), `"tai": want hte, monotonic, realtime`},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("got %v, want %s", c.err, c.want)
		}
	}
}
