package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixtureProbeEnv(root string) ProbeEnv {
	return ProbeEnv{
		Paths: PathsConfig{Sys: root + "/sys", Dev: root + "/dev", Run: root + "/run"},
		Timestamping: func(iface string) (phc.Timestamping, error) {
			if iface == "eth0" { // CPSW with CPTS: hardware timestamps
				return phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f}, nil
			}
			return phc.Timestamping{PHCIndex: -1, SOFlags: 0x1a}, nil
		},
		ReadPHC: func(path string) PHCProbe {
			return PHCProbe{Caps: &phc.Caps{MaxAdjPPB: 1000000, ExtTS: 4, PerOut: 1, PPS: true}, Method: "extended", OffsetNS: -37000000123, DelayNS: 1520}
		},
		Timex: func() (timebase.KernelState, error) {
			return timebase.KernelState{State: 0, Status: timebase.StaPLL | timebase.StaNano, FreqPPB: -1234, MaxErrorNS: 16000, TAIOffsetS: 37}, nil
		},
	}
}

func TestProbeFixtureGolden(t *testing.T) {
	inv := Probe(context.Background(), fixtureProbeEnv("testdata/probe"))
	inv.Host = "bbb-1"
	inv.GOOS, inv.GOARCH = "linux", "arm"
	var text bytes.Buffer
	inv.WriteText(&text)
	js, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{"probe.golden.txt": text.Bytes(), "probe.golden.json": js} {
		path := filepath.Join("testdata", name)
		if *update {
			os.WriteFile(path, got, 0o644)
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs; got:\n%s", name, got)
		}
	}
}

func TestProbeAbsentIsNotAnError(t *testing.T) {
	root := t.TempDir()
	env := fixtureProbeEnv(root)
	inv := Probe(context.Background(), env)
	var text bytes.Buffer
	inv.WriteText(&text)
	for _, want := range []string{
		"PTP hardware clocks:\n  absent: no /sys/class/ptp entries",
		"GPIO chips:\n  absent: no /dev/gpiochip*",
		"IIO devices:\n  absent:",
		"chronyd", "not reachable (absent: no such file or directory)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("probe text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestProbeReachesAListeningUnixSocket(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ptp4l")
	l, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Skipf("cannot listen on a unix datagram socket here: %v", err)
	}
	defer l.Close()
	sp := probeUnixgram(context.Background(), "ptp4l", path)
	if !sp.Present || !sp.Reachable {
		t.Fatalf("listening socket probed as %+v", sp)
	}
	l.Close()
	os.Remove(path)
	if sp := probeUnixgram(context.Background(), "ptp4l", path); sp.Present || sp.Reachable {
		t.Fatalf("removed socket probed as %+v", sp)
	}
}

func TestProbeRealMachine(t *testing.T) {
	inv := Probe(context.Background(), DefaultProbeEnv(Default().Paths))
	if len(inv.Clocks) != 5 {
		t.Fatalf("%d clocks", len(inv.Clocks))
	}
	for _, c := range inv.Clocks {
		if c.Error != "" || c.ResolutionNS <= 0 {
			t.Errorf("clock %+v", c)
		}
	}
	if inv.Kernel == nil {
		t.Errorf("no adjtimex state: %s", inv.KernelErr)
	}
	if _, err := json.Marshal(inv); err != nil {
		t.Fatal(err)
	}
}
