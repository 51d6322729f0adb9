package agent

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// lines renders problems one per line, as config check prints them.
func lines(ps Problems) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

func TestParseReportsEveryProblemWithItsLine(t *testing.T) {
	const file = "testdata/config/three-errors.yaml"
	_, err := Load(file)
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Load: %v, want Problems", err)
	}
	want := []string{
		file + `:6: clock.timex: want true or false, got "sometimes"`,
		file + ":8: phc.samplez: unknown key (known here: enabled, devices, interfaces, interval, samples, method, against, window, step_threshold, max_slew_ppm, judge, timescale, tai_utc, through)",
		file + ":13: ntp.servers[0].interval: must be at least 1s (servers rate-limit faster clients), got 500ms",
	}
	if got := lines(ps); !reflect.DeepEqual(got, want) {
		t.Fatalf("problems\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Line != 6 {
		t.Fatalf("errors.As finds %v, want the first problem", ke)
	}
}

func TestValidateReportsEveryProblemOfEverySection(t *testing.T) {
	c := Default()
	c.Clock.Interval = 0
	c.Clock.Clocks = []string{"sundial", "monotonic_raw"}
	c.PHC.Samples = 0
	c.Log.Level, c.Log.Format = "loud", "xml"
	c.Spool.FsyncInterval = -1
	err := c.Validate()
	var ps Problems
	if !errors.As(err, &ps) {
		t.Fatalf("Validate: %v", err)
	}
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.Key)
	}
	want := []string{"log.level", "log.format", "clock.interval", "clock.clocks[0]", "clock.clocks[1]", "phc.samples", "spool.fsync_interval"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
}

// Validate checks and never fills: defaults are set in one place.
func TestValidateDoesNotFillDefaults(t *testing.T) {
	c := Default()
	c.Sensors.Buffers = []SensorBufferConfig{{Device: "adc", Channels: []string{"voltage0"}}}
	c.NTP.Enabled = true
	c.NTP.Servers = []NTPServerConfig{{Address: "10.0.0.1"}}
	before := Default()
	before.Sensors.Buffers = []SensorBufferConfig{{Device: "adc", Channels: []string{"voltage0"}}}
	before.NTP.Enabled = true
	before.NTP.Servers = []NTPServerConfig{{Address: "10.0.0.1"}}
	err := c.Validate()
	if !reflect.DeepEqual(c, before) {
		t.Fatalf("Validate changed the configuration:\n%+v\n%+v", c.Sensors.Buffers, before.Sensors.Buffers)
	}
	for _, key := range []string{"sensors.buffers[0].length", "sensors.buffers[0].ring", "ntp.servers[0].interval", "ntp.servers[0].burst"} {
		if err == nil || !strings.Contains(err.Error(), key+": ") {
			t.Errorf("a zero %s is not reported: %v", key, err)
		}
	}
	c.Sensors.Buffers[0] = DefaultSensorBuffer("adc", "voltage0")
	c.NTP.Servers[0] = DefaultNTPServer("10.0.0.1")
	if err := c.Validate(); err != nil {
		t.Fatalf("entries with their defaults: %v", err)
	}
}

// A list entry decoded from a file has exactly the defaults of its type.
func TestListEntriesTakeTheirTypesDefaults(t *testing.T) {
	c, err := Parse("x.yaml", []byte("ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n    - address: 10.0.0.2\n      burst: 3\nsensors:\n  buffers:\n    - device: adc\n      channels: [voltage0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	s1 := DefaultNTPServer("10.0.0.2")
	s1.Burst = 3
	if want := []NTPServerConfig{DefaultNTPServer("10.0.0.1"), s1}; !reflect.DeepEqual(c.NTP.Servers, want) {
		t.Fatalf("servers %+v, want %+v", c.NTP.Servers, want)
	}
	if want := []SensorBufferConfig{DefaultSensorBuffer("adc", "voltage0")}; !reflect.DeepEqual(c.Sensors.Buffers, want) {
		t.Fatalf("buffers %+v, want %+v", c.Sensors.Buffers, want)
	}
	if d := DefaultSensorBuffer("adc"); d.Length != 128 || d.Ring != 4096 {
		t.Fatalf("buffer defaults %+v", d)
	}
	if d := DefaultNTPServer("x"); d.Interval <= 0 || d.Burst != 1 || d.BurstSpacing <= 0 || d.MaxDelayDevRatio <= 0 {
		t.Fatalf("server defaults %+v", d)
	}
}

// An empty section (a YAML null) keeps its defaults, as docs/configuration.md
// says; so does any key with no value, lists included.
func TestEmptySectionKeepsDefaults(t *testing.T) {
	c, err := Parse("x.yaml", []byte("ntp:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.NTP, Default().NTP) {
		t.Fatalf("ntp: alone gives %+v, want the defaults %+v", c.NTP, Default().NTP)
	}
	c, err = Load("testdata/config/empty-sections.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.src = nil
	if d := Default(); !reflect.DeepEqual(c, d) {
		t.Fatalf("empty sections gave\n%+v\nwant the defaults\n%+v", c, d)
	}
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "## Empty sections") || !strings.Contains(string(doc), "keeps its defaults") {
		t.Fatal("docs/configuration.md does not document empty sections")
	}
	// An empty list is written [] and means empty.
	c, err = Parse("x.yaml", []byte("clock:\n  clocks: []\n"))
	if err != nil || len(c.Clock.Clocks) != 0 {
		t.Fatalf("clocks: [] gives %v, %v", c.Clock.Clocks, err)
	}
}

// Every key of Config but host is a section of the table, once.
func TestSectionTableCoversConfig(t *testing.T) {
	seen := map[string]int{}
	var c Config
	for _, s := range sections() {
		seen[s.key]++
		if s.of(&c) == nil {
			t.Errorf("%s: no section", s.key)
		}
	}
	ct := reflect.TypeOf(c)
	for i := 0; i < ct.NumField(); i++ {
		tag := strings.Split(ct.Field(i).Tag.Get("yaml"), ",")[0]
		if tag == "" || tag == "host" {
			continue
		}
		if seen[tag] != 1 {
			t.Errorf("section %q is in the table %d times, want once", tag, seen[tag])
		}
		delete(seen, tag)
	}
	for k := range seen {
		t.Errorf("table entry %q is no key of Config", k)
	}
}

// Off the board, what only the board has is a warning; run's Preflight keeps
// failing on the phc and influx ones, as before.
func TestBoardSettingsAreWarnings(t *testing.T) {
	const file = "testdata/config/board-only.yaml"
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c.Paths.Sys = t.TempDir() // no interfaces, no IIO devices
	board := c.Board()
	want := map[string]int{
		"phc.devices[0]": 4, "phc.interfaces[0]": 5, "ntp.interface": 9, "ptp.probe.interface": 16,
		"sensors.buffers[0].device": 19, "influx.token_file": 25,
	}
	for _, p := range board {
		if !p.Warning || p.File != file || !strings.Contains(p.Error(), ": warning: needs the board: ") {
			t.Errorf("not a warning naming the file: %v", p)
		}
		if want[p.Key] != p.Line {
			t.Errorf("%s at line %d, want %d", p.Key, p.Line, want[p.Key])
		}
		delete(want, p.Key)
	}
	if len(want) > 0 {
		t.Errorf("no warning for %v; got:\n%s", want, board.Error())
	}
	ps, err := Check(file)
	if err != nil || len(ps) == 0 || len(ps.Errors()) != 0 {
		t.Fatalf("Check: %v %v", err, ps)
	}
	err = c.Preflight()
	var pre Problems
	if !errors.As(err, &pre) || len(pre) != 3 {
		t.Fatalf("Preflight: %v, want the phc device, interface and token file", err)
	}
	for _, p := range pre {
		if p.Warning || !strings.HasPrefix(p.Key, "phc.") && p.Key != "influx.token_file" {
			t.Errorf("Preflight: %v", p)
		}
	}
}

func TestShippedConfigsPassCheck(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	if len(files) == 0 {
		t.Fatal("no configs/*.yaml")
	}
	for _, f := range files {
		ps, err := Check(f)
		if err != nil || len(ps.Errors()) > 0 {
			t.Errorf("%s: %v %v", f, err, ps.Errors())
		}
		for _, w := range ps {
			t.Logf("%v", w)
		}
	}
}

// The board configurations' disabled sections are examples: switched on,
// they must be valid too.
func TestShippedConfigsExamplesAreValid(t *testing.T) {
	files, _ := filepath.Glob("../configs/*.yaml")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		on := strings.ReplaceAll(string(b), "\n  enabled: false", "\n  enabled: true")
		if _, err := Parse(f, []byte(on)); err != nil {
			t.Errorf("%s with every section enabled: %v", f, err)
		}
	}
}

func TestUnreadableFileIsAKeyError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Check(p)
	var ke *KeyError
	if !errors.As(err, &ke) || !errors.Is(err, os.ErrNotExist) || err.Error() != p+": cannot read: no such file or directory" {
		t.Fatalf("Check of a missing file: %v", err)
	}
	_, err = Parse("x.yaml", []byte("a: [\n"))
	if !errors.As(err, &ke) || ke.Line == 0 {
		t.Fatalf("a syntax error is %T %v, want a *KeyError with its line", err, err)
	}
}

// Every section of the table builds at least one kind of source, but for
// the agent's own, which build none: a source's section cannot be left out
// of the agent, nor a section without a builder pass for a source's. Source
// kinds are named once.
func TestEverySectionBuildsOrIsTheAgents(t *testing.T) {
	own := map[string]bool{"paths": true, "log": true, "output": true, "spool": true, "influx": true, "self_metrics": true, "memory": true, "http": true, "notify": true, "tags": true}
	kinds := map[string]bool{}
	for _, s := range sections() {
		if own[s.key] != (len(s.sources) == 0) {
			t.Errorf("section %s: %d source kinds; the agent's own sections build none, every other at least one", s.key, len(s.sources))
		}
		for _, k := range s.sources {
			if kinds[k.name] || k.enabled == nil || k.build == nil {
				t.Errorf("source kind %q twice, or without its enable condition or builder", k.name)
			}
			kinds[k.name] = true
			// Off in the defaults, but for the clock, phc and sensors sources.
			d := Default()
			if on := k.enabled(&d); on != map[string]bool{"clock": true, "phc": true, "sensors": true}[k.name] {
				t.Errorf("source kind %q enabled by default: %v", k.name, on)
			}
		}
	}
}
