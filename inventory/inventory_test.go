package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixtureProbeEnv(root string) Env {
	return Env{
		Paths: Paths{Sys: root + "/sys", Dev: root + "/dev", Run: root + "/run"},
		Timestamping: func(iface string) (sockts.Timestamping, error) {
			if iface == "eth0" { // CPSW with CPTS: hardware timestamps of PTP event messages only
				return cpswTimestamping, nil
			}
			return sockts.Timestamping{PHCIndex: -1, SOFlags: 0x1a}, nil
		},
		ReadPHC: func(path string) PHCProbe {
			return PHCProbe{Caps: &phc.Caps{MaxAdjPPB: 1000000, ExtTS: 4, PerOut: 1, PPS: true}, Method: "extended",
				OffsetNS: -37000000123, RealtimeNS: fixtureRealtimeNS, PHCNS: fixtureRealtimeNS + 37000000123, DelayNS: 1520}
		},
		Timex: func() (timebase.KernelState, error) {
			return timebase.KernelState{State: 0, Status: timebase.StaPLL | timebase.StaNano, FreqPPB: -1234, MaxErrorNS: 16000, TAIOffsetS: 37}, nil
		},
		GPIOChip: fixtureGPIOChip,
		PPS: func(path string) PPSProbe {
			// pps-gpio without capture-clear: asserts only.
			return PPSProbe{AssertCapture: true, Caps: []string{"capture_assert", "offset_assert", "echo_assert", "can_wait", "tsfmt_tspec"},
				Mode: []string{"capture_assert", "offset_assert", "tsfmt_tspec"}}
		},
	}
}

// fixtureGPIOChip is the BeagleBone's first GPIO bank, cut to four lines: a
// free line, the PPS input held by pps-gpio, a data-ready line monagent
// requested (rising edges, realtime stamps), and a line a driver holds
// without a name; the second chip cannot be opened.
func fixtureGPIOChip(path string) GPIOChipProbe {
	if strings.HasSuffix(path, "gpiochip1") {
		return GPIOChipProbe{Error: "gpio " + path + ": permission denied"}
	}
	return GPIOChipProbe{Name: "gpiochip0", Label: "44e07000.gpio", Lines: 4, Line: []GPIOLineProbe{
		{Offset: 0, Name: "P9_22", Flags: []string{"input"}},
		{Offset: 1, Name: "P9_12", Used: true, Consumer: "pps@0", Flags: []string{"input", "edge_rising"}},
		{Offset: 2, Name: "P8_26", Used: true, Consumer: "monagent", Flags: []string{"input", "edge_rising", "clock_realtime"}},
		{Offset: 3, Used: true, Flags: []string{"output", "active_low"}},
	}}
}

// fixtureRealtimeNS is 2026-11-23 10:15:02.123456789 UTC.
const fixtureRealtimeNS = 1795428902123456789

// cpswTimestamping is what ethtool reports for the AM335x CPSW: hardware
// stamps with the CPTS PHC, TX off/on, RX filters none and ptpv2-event.
var cpswTimestamping = sockts.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 1<<0 | 1<<1, RxFilters: 1<<0 | 1<<12}

// fixtureInventory is the fixture board with fixed system clock readings.
func fixtureInventory() Inventory {
	inv := Probe(context.Background(), fixtureProbeEnv("testdata/probe"))
	inv.Host = "bbb-1"
	inv.GOOS, inv.GOARCH = "linux", "arm"
	boot := int64(3*86400+4*3600+12*60+5)*1e9 + 123456789 // monotonic_raw: 3 d 04:12:05.123456789
	inv.Clocks = []ClockProbe{
		{Name: "realtime", ResolutionNS: 1, NowNS: fixtureRealtimeNS, OffsetNS: fixtureRealtimeNS - boot},
		{Name: "tai", ResolutionNS: 1, NowNS: fixtureRealtimeNS + 37e9, OffsetNS: fixtureRealtimeNS + 37e9 - boot},
		{Name: "monotonic", ResolutionNS: 1, NowNS: boot + 1234, OffsetNS: 1234},
		{Name: "monotonic_raw", ResolutionNS: 1, NowNS: boot, OffsetNS: -41},
		{Name: "boottime", ResolutionNS: 1, NowNS: boot + 12500000, OffsetNS: 12500000},
	}
	return inv
}

func TestProbeFixtureGolden(t *testing.T) {
	checkGolden(t, fixtureInventory(), "probe.golden")
}

// checkGolden compares the inventory's text and JSON whole with
// testdata/name.txt and name.json (-update rewrites them).
func checkGolden(t *testing.T, inv Inventory, name string) {
	t.Helper()
	var text bytes.Buffer
	inv.WriteText(&text)
	js, err := json.MarshalIndent(inv, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]byte{name + ".txt": text.Bytes(), name + ".json": js} {
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

// absentRoot holds nothing: the machine without PHCs, NICs, GPIO, PPS,
// sensors or daemons.
const absentRoot = "testdata/absent"

// absentInventory is a machine with nothing to measure but its clocks, whose
// kernel has no TAI offset.
func absentInventory(t *testing.T) Inventory {
	if _, err := os.Stat(absentRoot); err == nil {
		t.Fatalf("%s exists: the absent machine must have nothing", absentRoot)
	}
	env := fixtureProbeEnv(absentRoot)
	env.Timex = func() (timebase.KernelState, error) {
		return timebase.KernelState{State: 5, Status: timebase.StaUnsync, MaxErrorNS: 16000000}, nil
	}
	inv := Probe(context.Background(), env)
	inv.Host, inv.GOOS, inv.GOARCH = "bbb-2", "linux", "arm"
	return inv
}

// The machine with nothing: each empty list says why in JSON as in the text,
// and the TAI-UTC note is in both.
func TestProbeAbsentGolden(t *testing.T) {
	checkGolden(t, absentInventory(t), "probe-absent.golden")
}

// A script tells why a list is empty from the JSON alone: every empty list
// but those the text gives no reason for has its reason under "absent", the
// very words the text prints, and nothing else has one.
func TestProbeJSONSaysWhyAsTheTextDoes(t *testing.T) {
	for name, inv := range map[string]Inventory{"fixture": fixtureInventory(), "absent": absentInventory(t)} {
		t.Run(name, func(t *testing.T) {
			var text bytes.Buffer
			inv.WriteText(&text)
			js, err := json.Marshal(inv)
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]any
			if err := json.Unmarshal(js, &doc); err != nil {
				t.Fatal(err)
			}
			why, _ := doc["absent"].(map[string]any)
			if why == nil {
				t.Fatalf("no absent object in %s", js)
			}
			for key, title := range map[string]string{"phcs": "PTP hardware clocks", "gpio_chips": "GPIO chips", "pps": "PPS sources",
				"iio": "IIO devices", "hwmon": "hwmon chips", "thermal_zones": "Thermal zones"} {
				items, ok := doc[key].([]any)
				if !ok {
					t.Errorf("%s is not a list: %v", key, doc[key])
					continue
				}
				reason, _ := why[key].(string)
				switch {
				case len(items) > 0 && reason != "":
					t.Errorf("%s has %d entries, yet absent says %q", key, len(items), reason)
				case len(items) == 0 && reason == "":
					t.Errorf("%s is empty and absent does not say why", key)
				case len(items) == 0 && !strings.Contains(text.String(), title+":\n  absent: "+reason+"\n"):
					t.Errorf("%s: the text does not give the JSON's reason %q:\n%s", key, reason, text.String())
				}
				delete(why, key)
			}
			if len(why) != 0 {
				t.Errorf("absent names what is no list: %v", why)
			}
			k := doc["kernel_clock"].(map[string]any)
			note, _ := k["tai_utc_note"].(string)
			if (k["tai_offset_s"].(float64) == 0) != (note != "") || note != "" && !strings.Contains(text.String(), "\n  "+note+"\n") {
				t.Errorf("TAI-UTC %v s, note %q; text:\n%s", k["tai_offset_s"], note, text.String())
			}
		})
	}
}

// No list is null in the JSON, whatever the machine has and whichever
// readers ran: every list is [] when empty.
func TestProbeJSONHasNoNull(t *testing.T) {
	bare := Probe(context.Background(), Env{Paths: Paths{Sys: "testdata/probe/sys", Dev: "testdata/probe/dev", Run: "testdata/probe/run"}})
	for name, inv := range map[string]Inventory{"fixture": fixtureInventory(), "absent": absentInventory(t), "no readers": bare,
		"real machine": Probe(context.Background(), DefaultEnv(Paths{Sys: "/sys", Dev: "/dev", Run: "/run"}))} {
		js, err := json.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(js, &doc); err != nil {
			t.Fatal(err)
		}
		for _, p := range nulls("", doc) {
			t.Errorf("%s: %s is null", name, p)
		}
	}
	if len(bare.PHCs) != 1 || len(bare.GPIO) != 2 || len(bare.PPS) != 1 || len(bare.Interfaces) != 2 {
		t.Fatalf("the fixture without readers: %+v", bare)
	}
}

// nulls lists the paths of the nulls in a decoded JSON document.
func nulls(path string, v any) []string {
	var out []string
	switch v := v.(type) {
	case nil:
		return []string{path}
	case map[string]any:
		for k, e := range v {
			out = append(out, nulls(path+"."+k, e)...)
		}
	case []any:
		for i, e := range v {
			out = append(out, nulls(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	}
	return out
}

func TestProbeAbsentIsNotAnError(t *testing.T) {
	root := t.TempDir()
	env := fixtureProbeEnv(root)
	env.Timex = func() (timebase.KernelState, error) { return timebase.KernelState{Status: timebase.StaUnsync}, nil }
	inv := Probe(context.Background(), env)
	var text bytes.Buffer
	inv.WriteText(&text)
	for _, want := range []string{
		"PTP hardware clocks:\n  absent: no /sys/class/ptp entries",
		"GPIO chips:\n  absent: no /dev/gpiochip*",
		"IIO devices:\n  absent:",
		"chronyd", "not reachable (absent: no such file or directory)",
		"TAI-UTC 0 s\n  TAI-UTC not set",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("probe text lacks %q:\n%s", want, text.String())
		}
	}
}

func TestProbeRealMachine(t *testing.T) {
	inv := Probe(context.Background(), DefaultEnv(Paths{Sys: "/sys", Dev: "/dev", Run: "/run"}))
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

func TestProbeTextIsHumanAndJSONRaw(t *testing.T) {
	inv := fixtureInventory()
	var text bytes.Buffer
	inv.WriteText(&text)
	for _, want := range []string{
		"realtime       now 2026-11-23 10:15:02.123456789 UTC",
		"tai            now 2026-11-23 10:15:39.123456789 TAI",
		"monotonic      now 3 d 04:12:05.123458023 since boot",
		"boottime       now 3 d 04:12:05.135956789 since boot",
		"offset from monotonic_raw +1.234 µs",
		"offset from monotonic_raw -41 ns",
		"offset from monotonic_raw +12.5 ms",
		"read delay 1.52 µs",
		"PHC 2026-11-23 10:15:39.123456912",
		"PHC - realtime +37.000000123 s",
		"frequency -1234 ppb, maxerror 16 µs",
		"hardware timestamps: PTP yes, NTP no (rx filters: ptpv2-event; tx: off on)",
		"hardware timestamps: none, software only",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("probe text lacks %q:\n%s", want, text.String())
		}
	}
	js, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Clocks []struct {
			Name     string `json:"name"`
			NowNS    int64  `json:"now_ns"`
			OffsetNS int64  `json:"offset_from_monotonic_raw_ns"`
		} `json:"clocks"`
		PHCs []struct {
			OffsetNS   int64 `json:"offset_from_realtime_ns"`
			PHCNS      int64 `json:"phc_ns"`
			RealtimeNS int64 `json:"realtime_ns"`
			DelayNS    int64 `json:"read_delay_ns"`
		} `json:"phcs"`
		Interfaces []struct {
			Name      string   `json:"name"`
			RxFilters []string `json:"rx_filters"`
			PTP       bool     `json:"ptp_rx_hardware"`
			NTP       bool     `json:"ntp_rx_hardware"`
			TX        bool     `json:"tx_hardware"`
		} `json:"interfaces"`
	}
	if err := json.Unmarshal(js, &raw); err != nil {
		t.Fatal(err)
	}
	if c := raw.Clocks[0]; c.Name != "realtime" || c.NowNS != inv.Clocks[0].NowNS || c.OffsetNS != inv.Clocks[0].OffsetNS {
		t.Errorf("clock in JSON: %+v", c)
	}
	if p := raw.PHCs[0]; p.OffsetNS != -37000000123 || p.PHCNS != fixtureRealtimeNS+37000000123 || p.RealtimeNS != fixtureRealtimeNS || p.DelayNS != 1520 {
		t.Errorf("PHC in JSON: %+v", p)
	}
	if i := raw.Interfaces[0]; i.Name != "eth0" || !i.PTP || i.NTP || !i.TX || strings.Join(i.RxFilters, ",") != "none,ptpv2-event" {
		t.Errorf("eth0 in JSON: %+v", i)
	}
}
