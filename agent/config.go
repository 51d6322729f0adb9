package agent

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"os"
	"path"
	"strings"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// Config is monagent's configuration file. Every section has defaults
// (Default) and checks (Validate) that name the offending key. Later sources
// (ntp, ptp, gpio, sensors, hca) and outputs (spool, influx) add sections here.
type Config struct {
	Host        string            `yaml:"host"` // the host tag; default: the hostname
	Paths       PathsConfig       `yaml:"paths"`
	Log         LogConfig         `yaml:"log"`
	Clock       ClockConfig       `yaml:"clock"`
	PHC         PHCConfig         `yaml:"phc"`
	NTP         NTPConfig         `yaml:"ntp"`
	PTP         PTPConfig         `yaml:"ptp"`
	Sensors     SensorsConfig     `yaml:"sensors"`
	Loadgen     LoadgenConfig     `yaml:"loadgen"`
	Output      OutputConfig      `yaml:"output"`
	Spool       SpoolConfig       `yaml:"spool"`
	Influx      InfluxConfig      `yaml:"influx"`
	SelfMetrics SelfMetricsConfig `yaml:"self_metrics"`
}

// SpoolConfig is the durable on-disk store every record goes through. With no
// InfluxDB configured it is the embedded store the report reads.
type SpoolConfig struct {
	Enabled       bool          `yaml:"enabled"`
	Dir           string        `yaml:"dir"`
	SegmentBytes  int64         `yaml:"segment_bytes"`
	MaxBytes      int64         `yaml:"max_bytes"` // whole oldest segments are dropped beyond this, and counted
	FlushInterval time.Duration `yaml:"flush_interval"`
	FsyncInterval time.Duration `yaml:"fsync_interval"`
	Compress      bool          `yaml:"compress"`
}

// InfluxConfig ships the spool to InfluxDB's v2 write API (1.8: bucket "db/rp",
// token "user:pass"; 2.x/3.x: org, bucket, API token).
type InfluxConfig struct {
	Enabled bool   `yaml:"enabled"`
	URL     string `yaml:"url"`
	Org     string `yaml:"org"`
	Bucket  string `yaml:"bucket"`
	// The token comes from a file or an environment variable, never from this
	// file, and is never logged.
	TokenFile     string        `yaml:"token_file"`
	TokenEnv      string        `yaml:"token_env"`
	BatchPoints   int           `yaml:"batch_points"`
	BatchInterval time.Duration `yaml:"batch_interval"`
	Timeout       time.Duration `yaml:"timeout"`
	MaxBackoff    time.Duration `yaml:"max_backoff"`
	Gzip          bool          `yaml:"gzip"`
	DeadLetter    string        `yaml:"dead_letter"` // default: <spool.dir>/deadletter.lp
}

// NTPConfig is the NTP section: our own SNTP probe of each server, and
// chronyd's view of its sources.
type NTPConfig struct {
	Enabled bool              `yaml:"enabled"`
	Servers []NTPServerConfig `yaml:"servers"`
	Timeout time.Duration     `yaml:"timeout"` // wait for each reply
	TxWait  time.Duration     `yaml:"tx_wait"` // wait for a kernel transmit timestamp
	// Timestamping is software (kernel) or hardware (the NIC of Interface; its
	// PHC must be measured by the phc source so timestamps can be translated).
	Timestamping string       `yaml:"timestamping"`
	Interface    string       `yaml:"interface"`
	Chrony       ChronyConfig `yaml:"chrony"`
}

// NTPServerConfig is one server the probe measures.
type NTPServerConfig struct {
	Address      string        `yaml:"address"`  // host or host:port (port 123)
	Interval     time.Duration `yaml:"interval"` // between polls, at least 1 s
	Burst        int           `yaml:"burst"`    // requests per poll; the minimum-delay one is kept
	BurstSpacing time.Duration `yaml:"burst_spacing"`
	Basic        bool          `yaml:"basic"` // no interleaved mode
	// MaxDelayDevRatio flags samples whose delay rose more than this many
	// spreads above the recent minimum (chronyd's maxdelaydevratio; default 10,
	// negative: off). Flagged samples are shipped with delay_outlier=true.
	MaxDelayDevRatio float64 `yaml:"max_delay_dev_ratio"`
}

// ChronyConfig monitors a local chronyd.
type ChronyConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Socket   string        `yaml:"socket"`  // command socket (tracking, sources, ntpdata, serverstats)
	Address  string        `yaml:"address"` // or UDP host:port (tracking, sources only)
	Interval time.Duration `yaml:"interval"`
}

// fillDefaults gives list elements the defaults a YAML list cannot carry.
func (c *Config) fillDefaults() {
	for i := range c.NTP.Servers {
		s := &c.NTP.Servers[i]
		if s.Interval == 0 {
			s.Interval = 8 * time.Second // the reference study's best NTP setting
		}
		if s.Burst == 0 {
			s.Burst = 1
		}
		if s.BurstSpacing == 0 {
			s.BurstSpacing = 2 * time.Second
		}
	}
}

// Validate checks the ntp section.
func (n *NTPConfig) Validate() error {
	if !n.Enabled {
		return nil
	}
	if len(n.Servers) == 0 && !n.Chrony.Enabled {
		return keyErr("ntp.servers", "no server to probe and the chrony monitor is off")
	}
	for i, s := range n.Servers {
		key := fmt.Sprintf("ntp.servers[%d]", i)
		if s.Address == "" {
			return keyErr(key+".address", "must be set")
		}
		if s.Interval < time.Second {
			return keyErr(key+".interval", "must be at least 1s (servers rate-limit faster clients), got %s", s.Interval)
		}
		if s.Burst < 1 || s.Burst > 16 {
			return keyErr(key+".burst", "must be within 1..16, got %d", s.Burst)
		}
		if s.Burst > 1 && (s.BurstSpacing <= 0 || time.Duration(s.Burst-1)*s.BurstSpacing >= s.Interval) {
			return keyErr(key+".burst_spacing", "a burst of %d spaced %s does not fit the %s interval", s.Burst, s.BurstSpacing, s.Interval)
		}
	}
	if err := positive("ntp.timeout", n.Timeout); err != nil {
		return err
	}
	if err := positive("ntp.tx_wait", n.TxWait); err != nil {
		return err
	}
	switch n.Timestamping {
	case "software":
	case "hardware":
		if n.Interface == "" {
			return keyErr("ntp.interface", "hardware timestamping needs the interface")
		}
	default:
		return keyErr("ntp.timestamping", "%q is not software or hardware", n.Timestamping)
	}
	if n.Chrony.Enabled {
		if n.Chrony.Socket == "" && n.Chrony.Address == "" {
			return keyErr("ntp.chrony.socket", "set the command socket or a UDP address")
		}
		if err := positive("ntp.chrony.interval", n.Chrony.Interval); err != nil {
			return err
		}
	}
	return nil
}

// PTPConfig is the PTP section: ptp4l's state through its management socket,
// and our own measurement-only probe of the master.
type PTPConfig struct {
	Enabled bool           `yaml:"enabled"`
	Ptp4l   Ptp4lConfig    `yaml:"ptp4l"`
	Probe   PTPProbeConfig `yaml:"probe"`
}

// Ptp4lConfig monitors a ptp4l.
type Ptp4lConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Socket   string        `yaml:"socket"` // ptp4l's uds_address
	Domain   int           `yaml:"domain"`
	Interval time.Duration `yaml:"interval"`
	Timeout  time.Duration `yaml:"timeout"`
}

// PTPProbeConfig is the delay-request probe.
type PTPProbeConfig struct {
	Enabled   bool          `yaml:"enabled"`
	Interface string        `yaml:"interface"`
	Transport string        `yaml:"transport"` // udp (UDPv4) or l2 (IEEE 802.3, needs CAP_NET_RAW)
	Master    string        `yaml:"master"`    // unicast Delay_Req to this address; "" multicast
	Domain    int           `yaml:"domain"`
	TxWait    time.Duration `yaml:"tx_wait"`
	// Timestamping is software (kernel) or hardware (the NIC's PHC; the phc
	// source must track that PHC, its model moves the timestamps to REALTIME).
	Timestamping string `yaml:"timestamping"`
}

// Validate checks the ptp section.
func (p *PTPConfig) Validate() error {
	if !p.Enabled {
		return nil
	}
	if !p.Ptp4l.Enabled && !p.Probe.Enabled {
		return keyErr("ptp", "enable ptp4l (the monitor) or probe")
	}
	if p.Ptp4l.Enabled {
		if p.Ptp4l.Socket == "" {
			return keyErr("ptp.ptp4l.socket", "must be set (ptp4l's uds_address)")
		}
		if p.Ptp4l.Domain < 0 || p.Ptp4l.Domain > 255 {
			return keyErr("ptp.ptp4l.domain", "must be within 0..255, got %d", p.Ptp4l.Domain)
		}
		if err := positive("ptp.ptp4l.interval", p.Ptp4l.Interval); err != nil {
			return err
		}
		if err := positive("ptp.ptp4l.timeout", p.Ptp4l.Timeout); err != nil {
			return err
		}
	}
	if p.Probe.Enabled {
		if p.Probe.Interface == "" {
			return keyErr("ptp.probe.interface", "must be set")
		}
		if p.Probe.Transport != "udp" && p.Probe.Transport != "l2" {
			return keyErr("ptp.probe.transport", "%q: must be udp or l2", p.Probe.Transport)
		}
		if p.Probe.Transport == "l2" && p.Probe.Master != "" {
			return keyErr("ptp.probe.master", "unicast Delay_Req is for transport udp; l2 sends to 01:1b:19:00:00:00")
		}
		if p.Probe.Domain < 0 || p.Probe.Domain > 255 {
			return keyErr("ptp.probe.domain", "must be within 0..255, got %d", p.Probe.Domain)
		}
		if p.Probe.Master != "" {
			if _, err := netip.ParseAddr(p.Probe.Master); err != nil {
				return keyErr("ptp.probe.master", "%q is not an IP address", p.Probe.Master)
			}
		}
		if err := positive("ptp.probe.tx_wait", p.Probe.TxWait); err != nil {
			return err
		}
		if p.Probe.Timestamping != "software" && p.Probe.Timestamping != "hardware" {
			return keyErr("ptp.probe.timestamping", "%q is not software or hardware", p.Probe.Timestamping)
		}
	}
	return nil
}

// SensorsConfig is the sensor source: hwmon chips, thermal zones and IIO
// ADCs read one-shot through sysfs (paths.sys) every interval.
type SensorsConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
	Hwmon    bool          `yaml:"hwmon"`
	Thermal  bool          `yaml:"thermal"`
	IIO      bool          `yaml:"iio"`
	// Include keeps only sensors whose source/device/name matches one of these
	// patterns (path.Match: "hwmon/ina226/*", "iio/*/voltage[0-3]"); empty
	// keeps all.
	Include []string `yaml:"include"`
	// Rescan is how often the sysfs trees are listed again (a hot-plugged
	// chip, a driver loaded late).
	Rescan time.Duration `yaml:"rescan"`
	// Buffers sample IIO ADCs continuously through their buffers, each
	// sample with the kernel's timestamp.
	Buffers []SensorBufferConfig `yaml:"buffers"`
}

// SensorBufferConfig is one IIO device read through its buffer.
type SensorBufferConfig struct {
	Device   string   `yaml:"device"`   // its name (TI-am335x-adc.0.auto) or node (iio:device0)
	Channels []string `yaml:"channels"` // scan elements: voltage0, voltage1, ...
	Length   int      `yaml:"length"`   // the kernel buffer, in samples (default 128)
	Ring     int      `yaml:"ring"`     // samples between the reader and the shipper, a power of two (default 4096)
}

// maxBufferChannels bounds a buffered sample (the AM335x ADC has 8 inputs).
const maxBufferChannels = 8

// Validate checks the sensors section.
func (s *SensorsConfig) Validate() error {
	if !s.Enabled {
		return nil
	}
	if err := positive("sensors.interval", s.Interval); err != nil {
		return err
	}
	if err := positive("sensors.rescan", s.Rescan); err != nil {
		return err
	}
	if !s.Hwmon && !s.Thermal && !s.IIO {
		return keyErr("sensors", "enable hwmon, thermal or iio")
	}
	for i, p := range s.Include {
		if _, err := path.Match(p, ""); err != nil {
			return keyErr(fmt.Sprintf("sensors.include[%d]", i), "%q: %v", p, err)
		}
	}
	for i := range s.Buffers {
		b := &s.Buffers[i]
		key := fmt.Sprintf("sensors.buffers[%d]", i)
		if b.Device == "" {
			return keyErr(key+".device", "must be set (the IIO device's name or iio:deviceN)")
		}
		if len(b.Channels) == 0 || len(b.Channels) > maxBufferChannels {
			return keyErr(key+".channels", "%d channels: 1 to %d", len(b.Channels), maxBufferChannels)
		}
		if b.Length == 0 {
			b.Length = 128
		}
		if b.Ring == 0 {
			b.Ring = 4096
		}
		if b.Length < 1 {
			return keyErr(key+".length", "must be positive, got %d", b.Length)
		}
		if b.Ring < 1 || b.Ring&(b.Ring-1) != 0 {
			return keyErr(key+".ring", "%d is not a power of two", b.Ring)
		}
	}
	return nil
}

// LoadgenConfig is a synthetic source of sequence-numbered points, for checking
// delivery end to end and measuring throughput.
type LoadgenConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Rate     int           `yaml:"rate"` // points per second
	Interval time.Duration `yaml:"interval"`
}

// PathsConfig moves the kernel's file systems, for tests and containers.
type PathsConfig struct {
	Sys string `yaml:"sys"`
	Dev string `yaml:"dev"`
	Run string `yaml:"run"`
	// RuntimeDir holds the agent's own sockets (e.g. the chrony client's). ""
	// means $RUNTIME_DIRECTORY (systemd's RuntimeDirectory=), else the system's
	// temporary directory.
	RuntimeDir string `yaml:"runtime_dir"`
}

// Runtime returns the directory for the agent's own sockets.
func (p PathsConfig) Runtime() string {
	if p.RuntimeDir != "" {
		return p.RuntimeDir
	}
	if d := os.Getenv("RUNTIME_DIRECTORY"); d != "" {
		// systemd may list several, colon-separated; the first is ours.
		return strings.Split(d, ":")[0]
	}
	return os.TempDir()
}

// LogConfig sets the agent's log.
type LogConfig struct {
	Level  string `yaml:"level"`  // debug, info, warn, error
	Format string `yaml:"format"` // text or json
}

// ClockConfig is the system clock source: offsets between the system clocks,
// the kernel's adjtimex state and clock step detection.
type ClockConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
	// Clocks are measured against the reference clock (monotonic_raw).
	Clocks    []string `yaml:"clocks"`
	Reference string   `yaml:"reference"`
	Timex     bool     `yaml:"timex"`
	// A step is reported when a clock's offset from the reference moves by more
	// than StepThreshold beyond what MaxSlewPPM allows between two samples.
	StepThreshold time.Duration `yaml:"step_threshold"`
	MaxSlewPPM    float64       `yaml:"max_slew_ppm"`
}

// PHCConfig is the PTP hardware clock source.
type PHCConfig struct {
	Enabled bool `yaml:"enabled"`
	// Devices (/dev/ptpN) and Interfaces (whose PHC is used) to measure; both
	// empty means every PHC found.
	Devices    []string      `yaml:"devices"`
	Interfaces []string      `yaml:"interfaces"`
	Interval   time.Duration `yaml:"interval"`
	Samples    int           `yaml:"samples"` // best of N reads per sample
	Method     string        `yaml:"method"`  // auto, precise, extended, basic
	Against    []string      `yaml:"against"` // system clocks: realtime, monotonic_raw, monotonic
	Window     int           `yaml:"window"`  // samples in the translation model
}

// OutputConfig is where records go until the spool and InfluxDB sinks exist.
type OutputConfig struct {
	Stdout bool   `yaml:"stdout"`
	File   string `yaml:"file"` // line protocol appended here; "" for none
}

// SelfMetricsConfig is the agent's own metrics.
type SelfMetricsConfig struct {
	Enabled  bool          `yaml:"enabled"`
	Interval time.Duration `yaml:"interval"`
}

// Default returns the configuration used for every key a file leaves out.
func Default() Config {
	return Config{
		Paths: PathsConfig{Sys: "/sys", Dev: "/dev", Run: "/run"},
		Log:   LogConfig{Level: "info", Format: "text"},
		Clock: ClockConfig{
			Enabled: true, Interval: time.Second,
			Clocks:    []string{"realtime", "tai", "monotonic", "boottime"},
			Reference: "monotonic_raw", Timex: true,
			StepThreshold: time.Millisecond, MaxSlewPPM: 500,
		},
		PHC: PHCConfig{
			Enabled: true, Interval: time.Second, Samples: 9, Method: "auto",
			Against: []string{"realtime", "monotonic_raw"}, Window: 32,
		},
		NTP: NTPConfig{
			Timeout: time.Second, TxWait: 10 * time.Millisecond, Timestamping: "software",
			Chrony: ChronyConfig{Socket: "/run/chrony/chronyd.sock", Interval: 8 * time.Second},
		},
		PTP: PTPConfig{
			Ptp4l: Ptp4lConfig{Socket: "/var/run/ptp4l", Interval: time.Second, Timeout: time.Second},
			Probe: PTPProbeConfig{Transport: "udp", TxWait: 10 * time.Millisecond, Timestamping: "software"},
		},
		Sensors: SensorsConfig{Enabled: true, Interval: time.Second, Hwmon: true, Thermal: true, IIO: true, Rescan: time.Minute},
		Loadgen: LoadgenConfig{Rate: 1000, Interval: 100 * time.Millisecond},
		Output:  OutputConfig{},
		Spool: SpoolConfig{
			Enabled: true, Dir: "./data/spool", SegmentBytes: 4 << 20, MaxBytes: 256 << 20,
			FlushInterval: 100 * time.Millisecond, FsyncInterval: time.Second, Compress: true,
		},
		Influx: InfluxConfig{
			TokenEnv: "MONAGENT_INFLUX_TOKEN", BatchPoints: 5000, BatchInterval: time.Second,
			Timeout: 10 * time.Second, MaxBackoff: time.Second, Gzip: true,
		},
		SelfMetrics: SelfMetricsConfig{Enabled: true, Interval: 10 * time.Second},
	}
}

// KeyError is a configuration error at one key.
type KeyError struct {
	Key    string // dotted path, e.g. clock.interval or phc.devices[1]
	Reason string
	Line   int // line in the file, 0 when unknown
	File   string
}

func (e *KeyError) Error() string {
	loc := e.File
	if loc == "" {
		loc = "config"
	}
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", loc, e.Line)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Reason)
}

func keyErr(key, format string, a ...any) error {
	return &KeyError{Key: key, Reason: fmt.Sprintf(format, a...)}
}

// Validate checks every section and returns the first problem as a *KeyError.
func (c *Config) Validate() error {
	for _, v := range []func() error{c.Paths.Validate, c.Log.Validate, c.Clock.Validate, c.PHC.Validate, c.NTP.Validate, c.PTP.Validate, c.Sensors.Validate, c.Loadgen.Validate, c.validateOutputs, c.Spool.Validate, c.Influx.Validate, c.SelfMetrics.Validate} {
		if err := v(); err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the paths section.
func (p *PathsConfig) Validate() error {
	for _, kv := range [][2]string{{"paths.sys", p.Sys}, {"paths.dev", p.Dev}, {"paths.run", p.Run}} {
		if kv[1] == "" {
			return keyErr(kv[0], "must not be empty")
		}
	}
	return nil
}

// Validate checks the log section.
func (l *LogConfig) Validate() error {
	switch l.Level {
	case "debug", "info", "warn", "error":
	default:
		return keyErr("log.level", "%q is not one of debug, info, warn, error", l.Level)
	}
	if l.Format != "text" && l.Format != "json" {
		return keyErr("log.format", "%q is not text or json", l.Format)
	}
	return nil
}

// Validate checks the clock section.
func (c *ClockConfig) Validate() error {
	if err := positive("clock.interval", c.Interval); err != nil {
		return err
	}
	ref, err := timebase.ParseDomain(c.Reference)
	if _, sys := timebase.SystemClockFor(ref); err != nil || !sys {
		return keyErr("clock.reference", "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", c.Reference)
	}
	for i, name := range c.Clocks {
		d, err := timebase.ParseDomain(name)
		if _, sys := timebase.SystemClockFor(d); err != nil || !sys {
			return keyErr(fmt.Sprintf("clock.clocks[%d]", i), "%q is not a system clock (realtime, tai, monotonic, monotonic_raw, boottime)", name)
		}
		if d == ref {
			return keyErr(fmt.Sprintf("clock.clocks[%d]", i), "%q is the reference clock itself", name)
		}
	}
	if c.StepThreshold <= 0 {
		return keyErr("clock.step_threshold", "must be positive, got %s", c.StepThreshold)
	}
	if c.MaxSlewPPM < 0 || c.MaxSlewPPM > 1e6 {
		return keyErr("clock.max_slew_ppm", "must be within 0..1000000, got %g", c.MaxSlewPPM)
	}
	return nil
}

// Validate checks the phc section.
func (p *PHCConfig) Validate() error {
	if err := positive("phc.interval", p.Interval); err != nil {
		return err
	}
	if p.Samples < 1 || p.Samples > phc.MaxSamples {
		return keyErr("phc.samples", "must be within 1..%d (PTP_MAX_SAMPLES), got %d", phc.MaxSamples, p.Samples)
	}
	if _, err := phc.ParseMethod(p.Method); err != nil {
		return keyErr("phc.method", "%v", err)
	}
	if len(p.Against) == 0 {
		return keyErr("phc.against", "needs at least one system clock")
	}
	for i, name := range p.Against {
		d, err := timebase.ParseDomain(name)
		if err != nil || (d != timebase.DomainRealtime && d != timebase.DomainMonotonicRaw && d != timebase.DomainMonotonic) {
			return keyErr(fmt.Sprintf("phc.against[%d]", i), "%q: a PHC is read against realtime, monotonic or monotonic_raw", name)
		}
	}
	if p.Window < 2 {
		return keyErr("phc.window", "must be at least 2 samples, got %d", p.Window)
	}
	for i, d := range p.Devices {
		if d == "" {
			return keyErr(fmt.Sprintf("phc.devices[%d]", i), "must not be empty")
		}
	}
	return nil
}

// validateOutputs checks that records go somewhere.
func (c *Config) validateOutputs() error {
	if !c.Output.Stdout && c.Output.File == "" && !c.Spool.Enabled {
		return keyErr("output", "nowhere to write: enable the spool, stdout or a file")
	}
	if c.Influx.Enabled && !c.Spool.Enabled {
		return keyErr("influx.enabled", "InfluxDB is fed from the spool: set spool.enabled: true")
	}
	return nil
}

// Validate checks the spool section.
func (s *SpoolConfig) Validate() error {
	if !s.Enabled {
		return nil
	}
	if s.Dir == "" {
		return keyErr("spool.dir", "must not be empty")
	}
	if s.SegmentBytes < 4096 {
		return keyErr("spool.segment_bytes", "must be at least 4096, got %d", s.SegmentBytes)
	}
	if s.MaxBytes < 2*s.SegmentBytes {
		return keyErr("spool.max_bytes", "must hold at least two segments (%d), got %d", 2*s.SegmentBytes, s.MaxBytes)
	}
	if err := positive("spool.flush_interval", s.FlushInterval); err != nil {
		return err
	}
	return positive("spool.fsync_interval", s.FsyncInterval)
}

// Validate checks the influx section.
func (i *InfluxConfig) Validate() error {
	if !i.Enabled {
		return nil
	}
	u, err := url.Parse(i.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return keyErr("influx.url", "%q is not an http:// or https:// URL", i.URL)
	}
	if i.Bucket == "" {
		return keyErr("influx.bucket", `must be set ("db/rp" for InfluxDB 1.8)`)
	}
	if i.BatchPoints < 1 {
		return keyErr("influx.batch_points", "must be positive, got %d", i.BatchPoints)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"influx.batch_interval", i.BatchInterval}, {"influx.timeout", i.Timeout}, {"influx.max_backoff", i.MaxBackoff}} {
		if err := positive(d.key, d.v); err != nil {
			return err
		}
	}
	return nil
}

// Token reads the InfluxDB token from token_file, else from the token_env
// variable; "" when neither is set (an InfluxDB without authentication).
func (i *InfluxConfig) Token() (string, error) {
	if i.TokenFile != "" {
		b, err := os.ReadFile(i.TokenFile)
		if err != nil {
			return "", keyErr("influx.token_file", "%v", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	if i.TokenEnv != "" {
		return os.Getenv(i.TokenEnv), nil
	}
	return "", nil
}

// Validate checks the loadgen section.
func (l *LoadgenConfig) Validate() error {
	if !l.Enabled {
		return nil
	}
	if l.Rate < 1 || l.Rate > 10_000_000 {
		return keyErr("loadgen.rate", "must be within 1..10000000 points/s, got %d", l.Rate)
	}
	return positive("loadgen.interval", l.Interval)
}

// Validate checks the self_metrics section.
func (s *SelfMetricsConfig) Validate() error {
	return positive("self_metrics.interval", s.Interval)
}

func positive(key string, d time.Duration) error {
	if d <= 0 {
		return keyErr(key, "must be positive, got %s", d)
	}
	return nil
}

// Preflight checks the configuration against the machine: devices it names must
// exist. Config check and run both call it.
func (c *Config) Preflight() error {
	if c.Influx.Enabled {
		if _, err := c.Influx.Token(); err != nil {
			return err
		}
	}
	if !c.PHC.Enabled {
		return nil
	}
	for i, d := range c.PHC.Devices {
		if _, err := os.Stat(d); err != nil {
			return keyErr(fmt.Sprintf("phc.devices[%d]", i), "%s: %v", d, errors.Unwrap(err))
		}
	}
	for i, name := range c.PHC.Interfaces {
		if _, err := os.Stat(c.Paths.Sys + "/class/net/" + name); err != nil {
			return keyErr(fmt.Sprintf("phc.interfaces[%d]", i), "no network interface %q", name)
		}
	}
	return nil
}
