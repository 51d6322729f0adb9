package agent

import (
	"errors"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/sensors"
)

// SensorsConfig is the sensor source (source_sensors.go,
// source_sensors_buffer.go): hwmon chips, thermal zones and IIO ADCs read
// one-shot through sysfs (paths.sys) every interval, and IIO ADCs sampled
// continuously through their buffers.
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
	// sample with the kernel's timestamp (the timestamp channel is enabled
	// where the device has one; without one, a sample is timed by its
	// read: time_source=read, uncertainty_ns).
	Buffers []SensorBufferConfig `yaml:"buffers"`
}

// SensorBufferConfig is one IIO device read through its buffer.
type SensorBufferConfig struct {
	Device   string   `yaml:"device"`   // its name (TI-am335x-adc.0.auto) or node (iio:device0)
	Channels []string `yaml:"channels"` // scan elements: voltage0, voltage1, ...
	Length   int      `yaml:"length"`   // the kernel buffer, in samples (default 128)
	Ring     int      `yaml:"ring"`     // samples between the reader and the shipper, a power of two (default 4096)
}

func (s *SensorsConfig) defaults() {
	*s = SensorsConfig{Enabled: true, Interval: time.Second, Hwmon: true, Thermal: true, IIO: true, Rescan: time.Minute}
}

// defaults sets the keys of one sensors.buffers entry.
func (b *SensorBufferConfig) defaults() {
	*b = SensorBufferConfig{Length: 128, Ring: 4096}
}

// DefaultSensorBuffer is a buffers entry with every default for the device
// and channels given.
func DefaultSensorBuffer(device string, channels ...string) SensorBufferConfig {
	var b SensorBufferConfig
	b.defaults()
	b.Device, b.Channels = device, channels
	return b
}

// UnmarshalYAML decodes a buffers entry over its defaults, so that a key the
// entry leaves out keeps its default and a key it sets is checked.
func (b *SensorBufferConfig) UnmarshalYAML(n *yaml.Node) error {
	return conf.DecodeOver(n, b, DefaultSensorBuffer(""))
}

func (s *SensorsConfig) check(p *problems) {
	if !s.Enabled {
		return
	}
	p.Interval("sensors.interval", s.Interval)
	p.Positive("sensors.rescan", s.Rescan)
	if !s.Hwmon && !s.Thermal && !s.IIO {
		p.Add("sensors", "enable hwmon, thermal or iio")
	}
	for i, pat := range s.Include {
		if err := sensors.CheckGlob(pat); err != nil {
			p.Add(fmt.Sprintf("sensors.include[%d]", i), "%q: %v", pat, err)
		}
	}
	for i, b := range s.Buffers {
		key := fmt.Sprintf("sensors.buffers[%d]", i)
		p.Set(key+".device", b.Device, " (the IIO device's name or iio:deviceN)")
		if len(b.Channels) == 0 || len(b.Channels) > sensors.MaxScanChannels {
			p.Add(key+".channels", "%d channels: 1 to %d", len(b.Channels), sensors.MaxScanChannels)
		}
		if b.Length < 1 {
			p.Add(key+".length", "must be positive, got %d", b.Length)
		}
		checkRing(p, key+".ring", b.Ring)
	}
}

// board checks that every buffered IIO device is present under paths.sys.
func (s *SensorsConfig) board(paths PathsConfig, p *problems) {
	if !s.Enabled || len(s.Buffers) == 0 {
		return
	}
	fs := sensors.NewFS(paths.Sys, paths.Dev)
	for i, b := range s.Buffers {
		if b.Device == "" {
			continue
		}
		if _, err := fs.FindIIODevice(b.Device); err != nil {
			ke := &KeyError{Key: fmt.Sprintf("sensors.buffers[%d].device", i), Reason: err.Error()}
			var missing *sensors.NoDeviceError
			if !errors.As(err, &missing) { // the listing failed
				ke.Reason, ke.Err = fmt.Sprintf("no IIO device %q: %v", b.Device, err), err
			}
			p.Put(ke)
		}
	}
}
