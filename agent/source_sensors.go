package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// sensorsSource reads hwmon chips, thermal zones and IIO ADCs one-shot every
// interval, listing the sysfs trees again every rescan.
type sensorsSource struct {
	cfg  SensorsConfig
	fs   sensors.FS
	sel  *sensors.Selection // the sensors listed, listed again every rescan
	tags [][]record.Tag

	readErrors atomic.Uint64
}

func buildSensorsSource(env *Env) ([]collect.Source, error) {
	c := env.Config
	s := newSensorsSource(c.Sensors, sensors.NewFS(c.Paths.Sys, c.Paths.Dev), time.Now)
	if err := s.scan(); err != nil {
		env.Log.Warn("sensors: listing failed; retrying every rescan", "err", err)
	} else if len(s.sel.Sensors) == 0 {
		env.Log.Info("no hwmon, thermal or IIO sensor found; sensors source idle until one appears", "sysfs", c.Paths.Sys, "rescan", c.Sensors.Rescan)
	} else {
		env.Log.Info("sensors found", "count", len(s.sel.Sensors))
	}
	return []collect.Source{s}, nil
}

func newSensorsSource(cfg SensorsConfig, fs sensors.FS, now func() time.Time) *sensorsSource {
	s := &sensorsSource{cfg: cfg, fs: fs}
	s.sel = sensors.NewSelection(func() (sensors.Matched, error) {
		found, failed, err := fs.List(sensors.Trees{Hwmon: cfg.Hwmon, Thermal: cfg.Thermal, IIO: cfg.IIO}, s.included)
		return sensors.Matched{Sensors: found, Failed: failed}, err
	}, now)
	return s
}

func (s *sensorsSource) Name() string            { return "sensors" }
func (s *sensorsSource) Interval() time.Duration { return s.cfg.Interval }
func (s *sensorsSource) Close() error            { return s.sel.Close() }

// scan lists the sensors again (keeping none of the old files open); a
// chip whose name another chip shares is told apart by its node tag.
func (s *sensorsSource) scan() error {
	err := s.sel.Scan()
	found := s.sel.Sensors
	s.tags = s.tags[:0]
	for i, shared := range sensors.SharedDevices(found) {
		x := found[i]
		tags := []record.Tag{{Key: "source", Value: x.Source}, {Key: "device", Value: x.Device}, {Key: "sensor", Value: x.Name},
			{Key: "kind", Value: x.Kind.String()}, {Key: "unit", Value: x.Kind.Unit()}}
		if x.Label != "" {
			tags = append(tags, record.Tag{Key: "label", Value: x.Label})
		}
		if shared {
			tags = append(tags, record.Tag{Key: "node", Value: x.Node})
		}
		s.tags = append(s.tags, tags)
	}
	return err
}

func (s *sensorsSource) included(x *sensors.Sensor) bool {
	return len(s.cfg.Include) == 0 || x.Matches(s.cfg.Include)
}

// Collect reads every sensor; a sensor that fails is reported in the error
// and the others are shipped.
func (s *sensorsSource) Collect(ctx context.Context, b *collect.Batch) error {
	var errs []error
	if s.sel.Due(s.cfg.Rescan) {
		if err := s.scan(); err != nil {
			errs = append(errs, err)
		}
	}
	if len(s.sel.Sensors) == 0 {
		if len(errs) > 0 {
			return errors.Join(errs...)
		}
		return fmt.Errorf("sensors: none under %s: %w", s.fs.Sys, collect.ErrNoData)
	}
	for i, x := range s.sel.Sensors {
		v, err := x.Read()
		now := timebase.RealtimeNS()
		if err != nil {
			s.readErrors.Add(1)
			errs = append(errs, err)
			continue
		}
		b.Add("sensor", now, s.tags[i], record.Int("value", v))
	}
	return errors.Join(errs...)
}

// SelfFields implements collect.SelfReporter.
func (s *sensorsSource) SelfFields() []record.Field {
	return []record.Field{record.Int("sensors", int64(len(s.sel.Sensors))), record.Uint("read_errors", s.readErrors.Load()),
		record.Uint("scan_errors", s.sel.ScanFailures())}
}

// sensorsSection is the sensors section's entry in the table (config.go):
// one-shot readings and the buffered IIO devices.
var sensorsSection = section{key: "sensors", of: func(c *Config) sectionConfig { return &c.Sensors },
	sources: []sourceKind{
		{"sensors", func(c *Config) bool { return c.Sensors.Enabled }, buildSensorsSource},
		{"sensor_buffers", func(c *Config) bool { return c.Sensors.Enabled && len(c.Sensors.Buffers) > 0 }, buildSensorBuffers},
	},
	memory: []memoryUse{{what: "scans", bytes: scanEventBytes, size: func() uintptr { return unsafe.Sizeof(scan{}) },
		buffers: func(c *Config) []buffer {
			if !c.Sensors.Enabled {
				return nil
			}
			return rings("sensors.buffers", c.Sensors.Buffers, func(b SensorBufferConfig) int { return b.Ring })
		}}}}

// scanEventBytes is a buffer ring entry's budget (the memory check).
const scanEventBytes = 80
