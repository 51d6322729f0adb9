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
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1.8.10") {
		t.Fatalf("%s version: %v %s", bin, err, out)
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
