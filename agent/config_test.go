package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShippedConfigsLoad(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	if len(files) == 0 {
		t.Fatal("no configs/*.yaml")
	}
	for _, f := range files {
		if _, err := Load(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestDefaultIsValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestConfigErrorsNameFileLineKeyAndReason(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"unknown key", "clock:\n  intervall: 1s\n", "x.yaml:2: clock.intervall: unknown key (known here: enabled, interval,"},
		{"unknown section", "ntpp: {}\n", "x.yaml:1: ntpp: unknown key"},
		{"negative interval", "clock:\n  interval: -1s\n", "x.yaml:2: clock.interval: must be at least 10ms (a source's interval"},
		{"zero interval", "phc:\n  interval: 0s\n", "x.yaml:2: phc.interval: must be at least 10ms (a source's interval"},
		{"duration without unit", "phc:\n  interval: 5\n", `x.yaml:2: phc.interval: "5" is not a duration (write it with a unit`},
		{"wrong type int", "phc:\n  samples: many\n", `x.yaml:2: phc.samples: want an integer, got "many"`},
		{"wrong type bool", "clock:\n  timex: yes please\n", `x.yaml:2: clock.timex: want true or false, got "yes please"`},
		{"list expected", "phc:\n  devices: /dev/ptp0\n", `x.yaml:2: phc.devices: want a list, got "/dev/ptp0"`},
		{"mapping expected", "clock: fast\n", `x.yaml:1: clock: want a mapping of keys, got "fast"`},
		{"bad clock in list", "clock:\n  clocks:\n    - realtime\n    - sundial\n", `x.yaml:4: clock.clocks[1]: "sundial" is not a system clock`},
		{"reference measured against itself", "clock:\n  clocks: [monotonic_raw]\n", `x.yaml:2: clock.clocks[0]: "monotonic_raw" is the reference clock itself`},
		{"samples out of range", "phc:\n  samples: 26\n", "x.yaml:2: phc.samples: must be within 1..25 (PTP_MAX_SAMPLES), got 26"},
		{"bad method", "phc:\n  method: fastest\n", `x.yaml:2: phc.method: unknown PHC read method "fastest"`},
		{"phc against tai", "phc:\n  against: [tai]\n", `x.yaml:2: phc.against[0]: "tai": a PHC is read against`},
		{"phc step threshold 0", "phc:\n  step_threshold: 0s\n", "x.yaml:2: phc.step_threshold: must be positive, got 0s"},
		{"phc max slew negative", "phc:\n  max_slew_ppm: -1\n", "x.yaml:2: phc.max_slew_ppm: must be within 0..1000000, got -1"},
		{"phc max slew NaN", "phc:\n  max_slew_ppm: .nan\n", "x.yaml:2: phc.max_slew_ppm: must be within 0..1000000, got NaN"},
		{"no output", "output:\n  stdout: false\n  file: \"\"\nspool:\n  enabled: false\nhttp:\n  listen: \"\"\n", "x.yaml:1: output: nowhere to write"},
		{"influx without spool", "output:\n  stdout: true\nspool:\n  enabled: false\ninflux:\n  enabled: true\n  url: http://127.0.0.1:8086\n  bucket: db/rp\n", "x.yaml:6: influx.enabled: InfluxDB is fed from the spool"},
		{"influx bad url", "influx:\n  enabled: true\n  url: 127.0.0.1:8086\n  bucket: db/rp\n", `x.yaml:3: influx.url: "127.0.0.1:8086" is not an http:// or https:// URL`},
		{"influx no bucket", "influx:\n  enabled: true\n  url: http://127.0.0.1:8086\n", `x.yaml:1: influx.bucket: must be set ("db/rp" for InfluxDB 1.8)`},
		{"spool tiny segments", "spool:\n  segment_bytes: 100\n", "x.yaml:2: spool.segment_bytes: must be at least 4096, got 100"},
		{"spool cap below two segments", "spool:\n  segment_bytes: 1048576\n  max_bytes: 1048576\n", "x.yaml:3: spool.max_bytes: must hold at least two segments"},
		{"loadgen zero rate", "loadgen:\n  enabled: true\n  rate: 0\n", "x.yaml:3: loadgen.rate: must be within 1..10000000 points/s, got 0"},
		{"bad log level", "log:\n  level: loud\n", `x.yaml:2: log.level: "loud" is not one of debug, info, warn, error`},
		{"number as string", "host: 42\n", `x.yaml:1: host: want a string, got int "42" (quote it)`},
		{"second document", "clock:\n  interval: 1s\n---\nclock:\n  interval: 2s\n", "x.yaml:4: yaml: a second YAML document (after ---)"},
		{"second document broken", "clock:\n  interval: 1s\n---\nclock: [\n", "x.yaml:"},
		{"yaml syntax", "clock:\n  interval: [1s\n", "x.yaml:2: yaml: did not find expected ',' or ']'"},
		{"yaml syntax in a nested mapping", "a: 1\nb:\n  c: 1\n d: 2\n", "x.yaml:4: yaml: did not find expected key"},
		{"yaml syntax in a list", "- a\n- b\nc: 1\n", "x.yaml:3: yaml: did not find expected '-' indicator"},
		{"yaml scanner error", "a: 1\n\tb: 2\n", "x.yaml:2: yaml: found a tab character"},
		{"empty list entry", "ntp:\n  enabled: true\n  servers:\n    -\n", "x.yaml:4: ntp.servers[0]: an empty list entry"},
		{"empty string in a list", "clock:\n  clocks: [realtime, ~]\n", "x.yaml:2: clock.clocks[1]: an empty list entry"},
		{"key given twice", "clock:\n  interval: 1s\n  interval: 2s\n", "x.yaml:3: clock.interval: given twice (first on line 2)"},
		{"integer out of range", "spool:\n  max_bytes: 9223372036854775808\n", "x.yaml:2: spool.max_bytes: 9223372036854775808 is out of range for this key"},
		{"explicit zero burst is not the default", "ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n      burst: 0\n", "x.yaml:5: ntp.servers[0].burst: must be within 1..16, got 0"},
		{"http no connections", "http:\n  max_connections: 0\n", "x.yaml:2: http.max_connections: must be at least 2 (a scrape and `monagent status` at once), got 0"},
		{"http idle timeout too short", "http:\n  idle_timeout: 10ms\n", "x.yaml:2: http.idle_timeout: must be at least 1s, got 10ms"},
		{"http read timeout zero", "http:\n  read_timeout: 0s\n", "x.yaml:2: http.read_timeout: must be at least 100ms, got 0s"},
		{"http huge headers", "http:\n  max_connections: 2\n  max_header_bytes: 10485760\n", "x.yaml:3: http.max_header_bytes: must be within 1024..1048576 bytes (Prometheus sends < 1 KiB), got 10485760"},
		{"http connections beyond memory", "http:\n  max_connections: 2000\n", "x.yaml:2: http.max_connections: the configuration's memory needs at most"},
		{"explicit zero ring is not the default", "sensors:\n  buffers:\n    - device: adc\n      channels: [voltage0]\n      ring: 0\n", "x.yaml:5: sensors.buffers[0].ring: 0 is not a power of two"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("error\n  %s\nwant prefix\n  %s", err, c.want)
			}
			if strings.Contains(strings.TrimSpace(err.Error()), "\n") {
				t.Fatalf("error is more than one line: %q", err)
			}
		})
	}
}

func TestConfigOverridesDefaultsOnlyWhereSet(t *testing.T) {
	c, err := Parse("x.yaml", []byte("phc:\n  samples: 5\nclock:\n  interval: 250ms\n  timex: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := Default()
	if c.PHC.Samples != 5 || c.Clock.Interval != 250*time.Millisecond || c.PHC.Interval != d.PHC.Interval || !c.Clock.Timex {
		t.Fatalf("got %+v", c)
	}
	if c, err := Parse("empty.yaml", nil); err != nil || c.Clock.Interval != d.Clock.Interval {
		t.Fatalf("empty file: %v", err)
	}
}

func TestPreflightMissingDevice(t *testing.T) {
	c, err := Parse("x.yaml", []byte("phc:\n  devices: [/dev/ptp-does-not-exist]\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Preflight()
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "phc.devices[0]" || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("preflight: %v", err)
	}
	c.Paths.Sys = t.TempDir()
	c.PHC.Devices = nil
	c.PHC.Interfaces = []string{"eth9"}
	if err := c.Preflight(); err == nil || !strings.Contains(err.Error(), `phc.interfaces[0]: no network interface "eth9"`) {
		t.Fatalf("preflight interfaces: %v", err)
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestInfluxTokenFromFileOrEnvironment(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	os.WriteFile(file, []byte("user:pass\n"), 0o600)
	c := InfluxConfig{TokenFile: file, TokenEnv: "MONAGENT_TEST_TOKEN"}
	t.Setenv("MONAGENT_TEST_TOKEN", "from-env")
	if tok, err := c.Token(); err != nil || tok != "user:pass" {
		t.Fatalf("file token %q, %v", tok, err)
	}
	c.TokenFile = ""
	if tok, _ := c.Token(); tok != "from-env" {
		t.Fatalf("env token %q", tok)
	}
	c.TokenFile = filepath.Join(dir, "missing")
	if _, err := c.Token(); err == nil || !strings.Contains(err.Error(), "influx.token_file") {
		t.Fatalf("missing token file: %v", err)
	}
}

func TestNTPSection(t *testing.T) {
	c, err := Parse("x.yaml", []byte("ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n    - address: ntp.example:1123\n      interval: 16s\n      burst: 4\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.NTP.Servers
	if c.NTP.Timeout != time.Second || c.NTP.Chrony.First().target() != DefaultChronySocket || s[0].Interval != 8*time.Second || s[0].Burst != 1 || s[1].Burst != 4 || s[1].BurstSpacing != 2*time.Second {
		t.Fatalf("ntp section %+v", c.NTP)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n      interval: 500ms\n", "x.yaml:5: ntp.servers[0].interval: must be at least 1s"},
		{"ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n      burst: 8\n      interval: 8s\n", "x.yaml:4: ntp.servers[0].burst_spacing: a burst of 8 spaced 2s does not fit the 8s interval"},
		{"ntp:\n  enabled: true\n", "x.yaml:1: ntp.servers: no server to probe and the chrony and ntpd monitors are off"},
		{"ntp:\n  enabled: true\n  timestamping: hardware\n  servers:\n    - address: 10.0.0.1\n", "x.yaml:1: ntp.interface: hardware timestamping needs the interface"},
	} {
		if _, err := Parse("x.yaml", []byte(bad.yaml)); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestPTPSection(t *testing.T) {
	c, err := Parse("x.yaml", []byte("ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n"))
	if err != nil || c.PTP.Ptp4l.First().Socket != "/var/run/ptp4l" || c.PTP.Ptp4l.First().Interval != time.Second {
		t.Fatalf("ptp defaults: %+v %v", c.PTP, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"ptp:\n  enabled: true\n", "x.yaml:1: ptp: enable ptp4l (the monitor) or probe"},
		{"ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n    domain: 300\n", "x.yaml:5: ptp.ptp4l.domain: must be within 0..255, got 300"},
		{"ptp:\n  enabled: true\n  probe:\n    enabled: true\n", "x.yaml:3: ptp.probe.interface: must be set"},
		{"ptp:\n  enabled: true\n  probe:\n    enabled: true\n    interface: eth0\n    transport: l3\n", "x.yaml:6: ptp.probe.transport: \"l3\": must be udp or l2"},
		{"ptp:\n  enabled: true\n  probe:\n    enabled: true\n    interface: eth0\n    transport: l2\n    master: 10.0.0.1\n", "x.yaml:7: ptp.probe.master: unicast Delay_Req is for transport udp; l2 sends to 01:1b:19:00:00:00"},
		{"ptp:\n  enabled: true\n  probe:\n    enabled: true\n    interface: eth0\n    master: ptp-gm\n", `x.yaml:6: ptp.probe.master: "ptp-gm" is not an IP address`},
		{"ptp:\n  enabled: true\n  probe:\n    enabled: true\n    interface: eth0\n    timestamping: phc\n", `x.yaml:6: ptp.probe.timestamping: "phc" is not software or hardware`},
		{"ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n    timestamping: hw\n", `x.yaml:5: ptp.ptp4l.timestamping: "hw" is not software or hardware (ptp4l's time_stamping)`},
		{"ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n    timestamping: hardware\n", `x.yaml:3: ptp.ptp4l.interface: must be set (ptp4l's interface`},
	} {
		if _, err := Parse("x.yaml", []byte(bad.yaml)); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestSensorsSection(t *testing.T) {
	c, err := Parse("x.yaml", []byte("sensors:\n  include: [\"hwmon/ina226/*\"]\n"))
	if err != nil || !c.Sensors.Enabled || c.Sensors.Interval != time.Second || !c.Sensors.IIO || len(c.Sensors.Include) != 1 {
		t.Fatalf("sensors defaults: %+v %v", c.Sensors, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"sensors:\n  interval: 0s\n", "x.yaml:2: sensors.interval: "},
		{"sensors:\n  hwmon: false\n  thermal: false\n  iio: false\n", "x.yaml:1: sensors: enable hwmon, thermal or iio"},
		{"sensors:\n  include: [\"hwmon/[\"]\n", `x.yaml:2: sensors.include[0]: "hwmon/[": syntax error in pattern`},
		{"sensors:\n  buffers:\n    - channels: [voltage0]\n", "x.yaml:3: sensors.buffers[0].device: must be set"},
		{"sensors:\n  buffers:\n    - device: adc\n", "x.yaml:3: sensors.buffers[0].channels: 0 channels: 1 to 8"},
		{"sensors:\n  buffers:\n    - device: adc\n      channels: [voltage0]\n      ring: 1000\n", "x.yaml:5: sensors.buffers[0].ring: 1000 is not a power of two"},
	} {
		if _, err := Parse("x.yaml", []byte(bad.yaml)); err == nil || !strings.HasPrefix(err.Error(), bad.want) {
			t.Errorf("%q: %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestPHCNotMeasured(t *testing.T) {
	var p PHCConfig
	p.defaults()
	if why := p.notMeasured("/dev/ptp1"); why != "" {
		t.Errorf("every PHC found is measured: %q", why)
	}
	p.Devices = []string{"/dev/ptp0"}
	if why := p.notMeasured("/dev/ptp0/"); why != "" {
		t.Errorf("listed: %q", why)
	}
	want := "/dev/ptp1 is not among phc.devices [/dev/ptp0]: the phc source keeps no model of it"
	if why := p.notMeasured("/dev/ptp1"); !strings.HasPrefix(why, want) {
		t.Errorf("not listed: %q", why)
	}
	p.Interfaces = []string{"eth0"}
	if why := p.notMeasured("/dev/ptp1"); why != "" {
		t.Errorf("an interface may name it: %q", why)
	}
}
