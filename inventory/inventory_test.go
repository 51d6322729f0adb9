package inventory

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

var update = flag.Bool("update", false, "rewrite golden files")

func fixtureProbeEnv(root string) Env {
	return Env{
		Paths: Paths{Sys: root + "/sys", Dev: root + "/dev", Run: root + "/run"},
		Timestamping: func(iface string) (phc.Timestamping, error) {
			if iface == "eth0" { // CPSW with CPTS: hardware timestamps of PTP event messages only
				return cpswTimestamping, nil
			}
			return phc.Timestamping{PHCIndex: -1, SOFlags: 0x1a}, nil
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
var cpswTimestamping = phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 1<<0 | 1<<1, RxFilters: 1<<0 | 1<<12}

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
	inv := fixtureInventory()
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

func TestFormatTimes(t *testing.T) {
	for _, c := range []struct {
		ns             int64
		offset, length string
	}{
		{0, "0 ns", "0 ns"},
		{850, "+850 ns", "850 ns"},
		{-850, "-850 ns", "-850 ns"},
		{1234, "+1.234 µs", "1.234 µs"},
		{1520, "+1.52 µs", "1.52 µs"},
		{-12500000, "-12.5 ms", "-12.5 ms"},
		{999999, "+999.999 µs", "999.999 µs"},
		{1000000, "+1 ms", "1 ms"},
		{1234567, "+1.235 ms", "1.235 ms"},
		{999999600, "+0.9999996 s", "0.9999996 s"},
		{-37000000123, "-37.000000123 s", "-37.000000123 s"},
		{59999999999, "+59.999999999 s", "59.999999999 s"},
		{60e9, "+00:01:00", "00:01:00"},
		{(3*86400+4*3600+12*60+5)*1e9 + 5e8, "+3 d 04:12:05.5", "3 d 04:12:05.5"},
		{math.MinInt64, "-106751 d 23:47:16.854775808", "-106751 d 23:47:16.854775808"},
	} {
		if got := fmtOffset(c.ns); got != c.offset {
			t.Errorf("fmtOffset(%d) = %q, want %q", c.ns, got, c.offset)
		}
		if got := fmtDuration(c.ns); got != c.length {
			t.Errorf("fmtDuration(%d) = %q, want %q", c.ns, got, c.length)
		}
	}
	if got := fmtDate(fixtureRealtimeNS, "UTC"); got != "2026-11-23 10:15:02.123456789 UTC" {
		t.Errorf("fmtDate = %q", got)
	}
}

func TestHardwareVerdict(t *testing.T) {
	for _, c := range []struct {
		name         string
		ts           phc.Timestamping
		ptp, ntp, tx bool
	}{
		{"am335x cpsw: ptpv2-event only", cpswTimestamping, true, false, true},
		{"igb: all", phc.Timestamping{PHCIndex: 1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<1}, true, true, true},
		{"ntp-all", phc.Timestamping{PHCIndex: 2, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<15}, true, true, true},
		{"l2 and l4 ptp filters", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1<<0 | 1<<6 | 1<<9}, true, false, true},
		{"rx all, tx off only", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5c, TxTypes: 1, RxFilters: 1<<0 | 1<<1}, true, true, false},
		{"filter none only", phc.Timestamping{PHCIndex: 0, SOFlags: 0x5f, TxTypes: 3, RxFilters: 1}, false, false, true},
		{"no PHC", phc.Timestamping{PHCIndex: -1, SOFlags: 0x5f, TxTypes: 3, RxFilters: 3}, false, false, false},
		{"software only", phc.Timestamping{PHCIndex: -1, SOFlags: 0x1a}, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ptp, ntp, tx := hardwareVerdict(c.ts)
			if ptp != c.ptp || ntp != c.ntp || tx != c.tx {
				t.Fatalf("PTP %v NTP %v TX %v, want %v %v %v", ptp, ntp, tx, c.ptp, c.ntp, c.tx)
			}
		})
	}
}

// fakeInflux answers /ping and /api/v2/write as InfluxDB does: 401 for a
// wrong token, 404 for a bucket it does not have.
func fakeInflux(t *testing.T, token, bucket string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ping" && r.Method == http.MethodGet:
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/api/v2/write" && r.Method == http.MethodPost:
			if r.Header.Get("Authorization") != "Token "+token {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"code":"unauthorized","message":"unauthorized access"}`)
				return
			}
			if r.URL.Query().Get("bucket") != bucket || r.URL.Query().Get("precision") != "ns" {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":"database not found: \"`+r.URL.Query().Get("bucket")+`\""}`)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// influxSection is an influx section as the agent's configuration gives it:
// the token read from a file, else from an environment variable.
func influxSection(url, bucket, tokenFile, tokenEnv string) Influx {
	return Influx{URL: url, Bucket: bucket, TokenFile: tokenFile, TokenEnv: tokenEnv, Token: func() (string, error) {
		if tokenFile == "" {
			return os.Getenv(tokenEnv), nil
		}
		b, err := os.ReadFile(tokenFile)
		return strings.TrimSpace(string(b)), err
	}}
}

func TestProbeInflux(t *testing.T) {
	srv := fakeInflux(t, "user:pass", "db/rp")
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("user:pass\n"), 0o600)
	os.WriteFile(bad, []byte("user:wrong\n"), 0o600)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	for _, c := range []struct {
		name      string
		cfg       Influx
		reachable bool
		ok        bool
		detail    string
	}{
		{"ok", influxSection(srv.URL, "db/rp", good, ""), true, true, ""},
		{"trailing slash", influxSection(srv.URL+"/", "db/rp", good, ""), true, true, ""},
		{"wrong token", influxSection(srv.URL, "db/rp", bad, ""), true, false, "token refused: check influx.token_file (InfluxDB: {\"code\":\"unauthorized\""},
		{"wrong token env", influxSection(srv.URL, "db/rp", "", "MONAGENT_PROBE_TEST_TOKEN"), true, false, "token refused: check influx.token_env ($MONAGENT_PROBE_TEST_TOKEN)"},
		{"no bucket", influxSection(srv.URL, "nodb/rp", good, ""), true, false, `bucket/database not found: create "nodb/rp" or fix influx.bucket and influx.org (InfluxDB: {"error":"database not found`},
		{"unreachable", influxSection(closed.URL, "db/rp", good, ""), false, false, "unreachable: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := fixtureProbeEnv(t.TempDir())
			env.Influx = &c.cfg
			inv := Probe(context.Background(), env)
			ip := inv.Influx
			if ip == nil || ip.Reachable != c.reachable || ip.WriteOK != c.ok || !strings.HasPrefix(ip.Detail, c.detail) || (c.detail == "") != (ip.Detail == "") {
				t.Fatalf("got %+v, want reachable %v ok %v detail %q", ip, c.reachable, c.ok, c.detail)
			}
			var text bytes.Buffer
			inv.WriteText(&text)
			if !strings.Contains(text.String(), "InfluxDB "+c.cfg.URL) || !strings.Contains(text.String(), c.detail) {
				t.Errorf("text lacks the verdict %q:\n%s", c.detail, text.String())
			}
		})
	}
	if inv := Probe(context.Background(), fixtureProbeEnv(t.TempDir())); inv.Influx != nil {
		t.Errorf("no influx section, yet probed: %+v", inv.Influx)
	}
}

func TestProbeInfluxIsBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	ip := probeInflux(context.Background(), srv.Client(), Influx{URL: srv.URL, Bucket: "db/rp"})
	if d := time.Since(start); d < 2*time.Second || d > 4*time.Second {
		t.Errorf("a hanging server held the probe %v, want its 2 s limit", d)
	}
	if ip.Reachable || !strings.Contains(ip.Detail, "deadline exceeded") {
		t.Errorf("hanging server probed as %+v", ip)
	}
}

// The probe with fakes: PHC pins listed with their functions, or absent with
// the reason; a PPS device that can capture clear edges but does not, one
// that fails to open; a chip whose line info fails part way.
func TestProbeGPIOPPSAndPinsWithFakes(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"dev", "sys/class/ptp/ptp0", "sys/class/ptp/ptp1", "sys/class/pps/pps0"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"dev/gpiochip0", "dev/pps0", "dev/pps1", "dev/ptp0", "dev/ptp1"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{}
	for _, n := range []string{"ptp0", "ptp1"} {
		for _, f := range []string{"max_adjustment", "n_external_timestamps", "n_periodic_outputs", "pps_available"} {
			files["sys/class/ptp/"+n+"/"+f] = "0"
		}
	}
	for f, v := range map[string]string{
		"sys/class/ptp/ptp0/clock_name": "e1000e", "sys/class/ptp/ptp0/n_programmable_pins": "2",
		"sys/class/ptp/ptp1/clock_name": "CTPS timer", "sys/class/ptp/ptp1/n_programmable_pins": "2",
		"sys/class/pps/pps0/name": "pps@4",
	} {
		files[f] = v
	}
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(root, f), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := fixtureProbeEnv(root)
	env.ReadPHC = func(path string) PHCProbe {
		if strings.HasSuffix(path, "ptp1") {
			return PHCProbe{Caps: &phc.Caps{Pins: 2}, PinsError: "phc " + path + ": PTP_PIN_GETFUNC 0: operation not supported"}
		}
		return PHCProbe{Caps: &phc.Caps{ExtTS: 2, Pins: 2}, PinFuncs: []phc.Pin{
			{Name: "SDP0", Index: 0, Func: phc.PinExtTS, Channel: 1}, {Name: "SDP1", Index: 1, Func: phc.PinNone}}}
	}
	env.GPIOChip = func(path string) GPIOChipProbe {
		return GPIOChipProbe{Name: "gpiochip0", Label: "gpio-sim.0-node0", Lines: 8,
			Line:  []GPIOLineProbe{{Offset: 0, Name: "trigger", Used: true, Consumer: "monagent", Flags: []string{"input", "edge_both"}}},
			Error: "gpio " + path + " line 1: GPIO_V2_GET_LINEINFO_IOCTL: input/output error"}
	}
	env.PPS = func(path string) PPSProbe {
		if strings.HasSuffix(path, "pps1") {
			return PPSProbe{Error: "pps " + path + ": PPS_GETCAP: not a PPS device: inappropriate ioctl for device"}
		}
		return ppsProbe(gpio.PPSInfo{Caps: gpio.PPSCaptureAssert | gpio.PPSCaptureClear | gpio.PPSCanWait, Mode: gpio.PPSCaptureAssert})
	}
	inv := Probe(context.Background(), env)
	var text bytes.Buffer
	inv.WriteText(&text)
	for _, want := range []string{
		`pin 0 "SDP0": extts channel 1`,
		`pin 1 "SDP1": none channel 0`,
		"pins: absent: phc " + root + "/dev/ptp1: PTP_PIN_GETFUNC 0: operation not supported",
		`used by "monagent"`,
		"gpio " + root + "/dev/gpiochip0 line 1: GPIO_V2_GET_LINEINFO_IOCTL",
		"dev/pps0 pps@4: assert capture yes, clear capture possible, not enabled (PPS_SETPARAMS)",
		"caps capture_assert capture_clear can_wait; mode capture_assert",
		"dev/pps1 none: pps " + root + "/dev/pps1: PPS_GETCAP: not a PPS device",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("probe text lacks %q:\n%s", want, text.String())
		}
	}
	if len(inv.PPS) != 2 || !inv.PPS[0].ClearCapture || inv.PPS[1].AssertCapture || inv.PPS[0].Name != "pps@4" {
		t.Errorf("pps inventory %+v", inv.PPS)
	}
	if len(inv.GPIO) != 1 || inv.GPIO[0].Path != root+"/dev/gpiochip0" || len(inv.GPIO[0].Line) != 1 {
		t.Errorf("gpio inventory %+v", inv.GPIO)
	}
}

// The real readers on nodes that are not devices (the fixture's empty files):
// an error naming the node, never a panic or an empty entry.
func TestProbeReadersOnNonDevices(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"gpiochip0", "pps0"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chip := readGPIOChip(filepath.Join(dir, "gpiochip0"))
	pps := readPPS(filepath.Join(dir, "pps0"))
	missing := readPPS(filepath.Join(dir, "pps9"))
	for _, c := range []struct{ what, err, path string }{
		{"chip", chip.Error, "gpiochip0"}, {"pps", pps.Error, "pps0"}, {"missing pps", missing.Error, "pps9"},
	} {
		if c.err == "" {
			t.Errorf("%s: no error", c.what)
			continue
		}
		if runtime.GOOS == "linux" && !strings.Contains(c.err, c.path) {
			t.Errorf("%s: error %q does not name %s", c.what, c.err, c.path)
		}
	}
	if chip.Lines != 0 || len(chip.Line) != 0 || pps.AssertCapture || len(pps.Caps) != 0 {
		t.Errorf("non-devices probed as %+v, %+v", chip, pps)
	}
}
