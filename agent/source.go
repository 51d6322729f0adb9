package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// Source is one kind of measurement. The agent calls Collect every Interval from
// one goroutine; Collect appends records to the batch.
type Source interface {
	Name() string
	Interval() time.Duration
	// Collect measures once. It returns ErrNoData when there is nothing to
	// measure by design (not an error), and may return an error together with
	// records it did collect.
	Collect(ctx context.Context, b *Batch) error
	Close() error
}

// SelfReporter is implemented by sources with counters of their own beyond the
// agent's per-source ones (e.g. PHC read-method fallbacks). The agent calls
// SelfFields on the source's collection goroutine right after each Collect and
// ships the latest snapshot with its self-metrics, so counters that only
// Collect writes need no lock; counters a reader goroutine writes are atomics.
type SelfReporter interface {
	SelfFields() []record.Field
}

// ErrNoData means a source had nothing to measure, by design.
var ErrNoData = errors.New("no data")

// Batch collects the records of one collection.
type Batch struct {
	host    string
	Records []record.Record
}

// Add appends a record; the host tag is added to every record.
func (b *Batch) Add(measurement string, timeNS int64, tags []record.Tag, fields ...record.Field) {
	t := make([]record.Tag, 0, len(tags)+1)
	t = append(t, record.Tag{Key: "host", Value: b.host})
	t = append(t, tags...)
	b.Records = append(b.Records, record.Record{Measurement: measurement, Tags: t, Fields: fields, TimeNS: timeNS})
}

// Env is what a source gets when it is built.
type Env struct {
	Config      *Config
	Log         *slog.Logger
	Translators *timebase.Translators
	// Global places event times on the cluster's HCA timeline; nil when the
	// hca section is off.
	Global *GlobalClock
}

// registration builds the sources of one configuration section.
type registration struct {
	name    string
	enabled func(*Config) bool
	build   func(*Env) ([]Source, error)
}

// registrations lists every source kind; later sections add theirs here.
func registrations() []registration {
	return []registration{
		{"clock", func(c *Config) bool { return c.Clock.Enabled }, buildClockSource},
		{"phc", func(c *Config) bool { return c.PHC.Enabled }, buildPHCSources},
		{"ntp", func(c *Config) bool { return c.NTP.Enabled && len(c.NTP.Servers) > 0 }, buildNTPSources},
		{"chrony", func(c *Config) bool { return c.NTP.Enabled && c.NTP.Chrony.Enabled }, buildChronySource},
		{"ptp4l", func(c *Config) bool { return c.PTP.Enabled && c.PTP.Ptp4l.Enabled }, buildPtp4lSource},
		{"ptp_probe", func(c *Config) bool { return c.PTP.Enabled && c.PTP.Probe.Enabled }, buildPTPProbe},
		{"sensors", func(c *Config) bool { return c.Sensors.Enabled }, buildSensorsSource},
		{"sensor_buffers", func(c *Config) bool { return c.Sensors.Enabled && len(c.Sensors.Buffers) > 0 }, buildSensorBuffers},
		{"gpio", func(c *Config) bool { return c.GPIO.Enabled }, buildGPIOSources},
		{"pps", func(c *Config) bool { return c.PPS.Enabled }, buildPPSSources},
		{"extts", func(c *Config) bool { return c.Extts.Enabled }, buildExttsSources},
		{"hca", func(c *Config) bool { return c.HCA.Enabled }, buildHCASource},
		{"marker", func(c *Config) bool { return c.Marker.Enabled }, buildMarkerSource},
		{"loadgen", func(c *Config) bool { return c.Loadgen.Enabled }, buildLoadgen},
	}
}
