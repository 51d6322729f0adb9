package testbed

import (
	"os/exec"
	"strings"
	"testing"
)

// TestInfluxdBinary builds (once) and checks the influxd the integration tests
// use; scripts/test.sh runs it first so that no other test pays for the build.
func TestInfluxdBinary(t *testing.T) {
	bin := InfluxdBinary(t)
	// go install sets no version string; the build info names the module.
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "github.com/influxdata/influxdb\t"+InfluxdVersion) {
		t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
	}
}

func TestInfluxdStartsAndAnswers(t *testing.T) {
	in := StartInfluxd(t, "probe")
	if n := in.Count("probe", "nothing", "x"); n != 0 {
		t.Fatalf("empty database counts %d", n)
	}
	in.Stop()
	in.Start() // same port, same data
	in.Query("probe", "SHOW MEASUREMENTS")
}
