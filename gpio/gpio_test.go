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
