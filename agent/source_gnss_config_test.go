package agent

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// gnss.max_devices (1 to 64) and gnss.read_timeout (at least 2 s) are
// checked, each problem naming its key; the defaults pass.
func TestGNSSBoundsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     func(g *GNSSConfig)
		wantKey string
	}{
		{"defaults", func(*GNSSConfig) {}, ""},
		{"no device", func(g *GNSSConfig) { g.MaxDevices = 0 }, "gnss.max_devices"},
		{"too many devices", func(g *GNSSConfig) { g.MaxDevices = 200_000 }, "gnss.max_devices"},
		{"timeout under two cycles", func(g *GNSSConfig) { g.ReadTimeout = time.Second }, "gnss.read_timeout"},
		{"no timeout", func(g *GNSSConfig) { g.ReadTimeout = 0 }, "gnss.read_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.GNSS.Enabled = true
			tc.set(&c.GNSS)
			err := c.Validate()
			var ps Problems
			switch {
			case tc.wantKey == "" && err != nil:
				t.Fatalf("the defaults: %v", err)
			case tc.wantKey == "":
			case !errors.As(err, &ps) || len(ps) != 1 || ps[0].Key != tc.wantKey:
				t.Fatalf("%v; want one problem of %s", err, tc.wantKey)
			case !strings.Contains(err.Error(), tc.wantKey):
				t.Fatalf("%v does not name %s", err, tc.wantKey)
			}
		})
	}
	if d := Default().GNSS; d.MaxDevices != 8 || d.ReadTimeout != 10*time.Second {
		t.Errorf("defaults %d devices, read timeout %v; want 8, 10s as documented", d.MaxDevices, d.ReadTimeout)
	}
}
