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
