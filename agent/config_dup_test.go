package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The same thing configured twice would make two series collide (two sources
// named ntp:192.0.2.1:123, two identical clock_offset or phc_offset points, two PPS devices
// under one name): config check refuses it, naming both entries and lines.
// An NTP address that cannot be one (port 99999) is refused with its line
// (before, run refused it with no file or line, and config check passed it).
func TestConfigRefusesDuplicatesAndBadAddresses(t *testing.T) {
	for _, tc := range []struct{ name, yaml, key, want string }{
		{"ntp server written two ways", "ntp:\n  enabled: true\n  servers:\n    - address: 192.0.2.1\n    - address: 192.0.2.1:123\n",
			"ntp.servers[1].address", "(ntp.servers[0].address, line 4)"},
		{"ntp name in two cases", "ntp:\n  enabled: true\n  servers:\n    - address: ntp.example.org\n    - address: NTP.Example.org:123\n",
			"ntp.servers[1].address", "(ntp.servers[0].address, line 4)"},
		{"ntp v4-mapped", "ntp:\n  enabled: true\n  servers:\n    - address: \"[::ffff:192.0.2.1]:123\"\n    - address: 192.0.2.1\n",
			"ntp.servers[1].address", "(ntp.servers[0].address, line 4)"},
		{"ntp port 99999", "ntp:\n  enabled: true\n  servers:\n    - address: 127.0.0.1:99999\n",
			"ntp.servers[0].address", `port "99999" is not a number within 1..65535`},
		{"ntp port 0", "ntp:\n  enabled: true\n  servers:\n    - address: 127.0.0.1:0\n",
			"ntp.servers[0].address", "within 1..65535"},
		{"ntp empty host", "ntp:\n  enabled: true\n  servers:\n    - address: \":123\"\n",
			"ntp.servers[0].address", "not a host name or address"},
		{"clock twice", "clock:\n  clocks: [tai, realtime, tai]\n", "clock.clocks[2]", "listed twice"},
		{"chrony socket and address", "ntp:\n  enabled: true\n  chrony:\n    enabled: true\n    socket: /run/chrony/chronyd.sock\n    address: 127.0.0.1:323\n",
			"ntp.chrony.address", "not both (the socket gives ntpdata and serverstats too) (ntp.chrony.socket, line 5)"},
		{"pps name twice", "pps:\n  enabled: true\n  devices:\n    - {device: /dev/pps0, name: gnss}\n    - {device: /dev/pps1, name: gnss}\n",
			"pps.devices[1].name", "(pps.devices[0], line 4)"},
		{"pps device twice", "pps:\n  enabled: true\n  devices:\n    - {device: /dev/pps0}\n    - {device: pps0, name: other}\n",
			"pps.devices[1].device", "(pps.devices[0].device, line 4)"},
		{"phc against twice", "phc:\n  against:\n    - realtime\n    - realtime\n",
			"phc.against[1]", `"realtime" is listed twice: two identical phc_offset points each collection (phc.against[0], line 3)`},
		{"phc against twice in a flow list", "phc:\n  against: [monotonic_raw, realtime, monotonic_raw]\n", "phc.against[2]", "(phc.against[0], line 2)"},
		{"phc device twice", "phc:\n  devices:\n    - /dev/ptp0\n    - /dev//ptp0\n", "phc.devices[1]", "/dev//ptp0 is listed twice: list each PHC once (phc.devices[0], line 3)"},
		{"phc interface twice", "phc:\n  interfaces:\n    - eth0\n    - eth1\n    - eth0\n", "phc.interfaces[2]", "eth0 is listed twice: list each PHC once (phc.interfaces[0], line 3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("dup.yaml", []byte(tc.yaml))
			var ps Problems
			if !errors.As(err, &ps) {
				t.Fatalf("accepted: %v", err)
			}
			for _, p := range ps {
				if p.Key == tc.key && strings.Contains(p.Error(), tc.want) && p.Line > 0 {
					t.Logf("%s", p)
					return
				}
			}
			t.Fatalf("want %s: ...%s..., got:\n%v", tc.key, tc.want, err)
		})
	}
	for _, ok := range []string{
		"ntp:\n  enabled: true\n  servers:\n    - address: 192.0.2.1\n    - address: 192.0.2.1:1123\n    - address: \"[2001:db8::1]:123\"\n    - address: 2001:db8::2\n    - address: ntp.example.org\n",
		"pps:\n  enabled: true\n  devices:\n    - {device: /dev/pps0}\n    - {device: /dev/pps1}\n",
		"phc:\n  devices: [/dev/ptp0, /dev/ptp1]\n  interfaces: [eth0, eth1]\n  against: [realtime, monotonic, monotonic_raw]\n",
		"ntp:\n  enabled: true\n  chrony:\n    enabled: true\n    address: 127.0.0.1:323\n",
	} {
		if _, err := Parse("ok.yaml", []byte(ok)); err != nil {
			t.Errorf("refused %q: %v", ok, err)
		}
	}
	// The UDP address alone is used (it was ignored for the default socket).
	c, _ := Parse("udp.yaml", []byte("ntp:\n  enabled: true\n  chrony:\n    enabled: true\n    address: 127.0.0.1:323\n"))
	if c.NTP.Chrony.First().target() != "127.0.0.1:323" {
		t.Errorf("chrony target %q with only address set", c.NTP.Chrony.First().target())
	}
	if d := Default(); d.NTP.Chrony.First().target() != DefaultChronySocket {
		t.Errorf("default chrony target %q", d.NTP.Chrony.First().target())
	}
}

// Hardware timestamps on an interface without a PHC: run refuses it, so
// config check says so first (a warning off the board, where the interface
// may differ), naming file and line; with a PHC it is fine.
func TestBoardChecksTheInterfaceHasAPHC(t *testing.T) {
	sys := t.TempDir()
	for _, d := range []string{"class/net/eth9", "class/net/eth8/device/ptp/ptp3"} {
		if err := os.MkdirAll(filepath.Join(sys, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for iface, want := range map[string]string{"eth9": "eth9 has no PTP hardware clock", "eth8": "", "eth7": `no network interface "eth7"`} {
		body := "paths:\n  sys: " + sys + "\nntp:\n  enabled: true\n  timestamping: hardware\n  interface: " + iface + "\n  servers:\n    - address: 127.0.0.1\n"
		path := filepath.Join(t.TempDir(), "hw.yaml")
		os.WriteFile(path, []byte(body), 0o644)
		ps, err := Check(path)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, p := range ps {
			if p.Key == "ntp.interface" {
				got = p.Error()
			}
		}
		if want == "" && got != "" || want != "" && (!strings.Contains(got, want) || !strings.Contains(got, path+":6:")) {
			t.Errorf("%s: %q, want %q at %s:6", iface, got, want, path)
		}
	}
}

// InfluxDB without a token is allowed (an InfluxDB without authentication)
// and run starts, but config check says so: it is the cause of every 401.
func TestConfigCheckWarnsOfNoInfluxToken(t *testing.T) {
	t.Setenv("MONAGENT_INFLUX_TOKEN", "")
	path := filepath.Join(t.TempDir(), "inf.yaml")
	os.WriteFile(path, []byte("influx:\n  enabled: true\n  url: http://127.0.0.1:8086\n  bucket: db/rp\n"), 0o644)
	ps, err := Check(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || !ps[0].Warning || ps[0].Key != "influx.token_env" || !strings.Contains(ps[0].Reason, "no token") {
		t.Fatalf("config check: %v", ps)
	}
	c, _ := Load(path)
	if err := c.Preflight(); err != nil {
		t.Fatalf("run refuses an InfluxDB without a token: %v", err)
	}
	t.Setenv("MONAGENT_INFLUX_TOKEN", "user:pass")
	if ps, _ := Check(path); len(ps) != 0 {
		t.Fatalf("with a token: %v", ps)
	}
}
