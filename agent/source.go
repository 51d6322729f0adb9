package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
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
	Translators *Translators
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

// Translators holds the clock translators sources maintain, keyed by domains, so
// that event sources can move kernel timestamps between clock domains.
type Translators struct {
	mu  sync.RWMutex
	m   map[[2]timebase.Domain]*timebase.Translator
	gen atomic.Uint64 // bumped when a translator is added (Routes search again)
}

// NewTranslators returns an empty set.
func NewTranslators() *Translators {
	return &Translators{m: map[[2]timebase.Domain]*timebase.Translator{}}
}

// Get returns the translator from -> to, creating it with window samples.
func (t *Translators) Get(from, to timebase.Domain, window int) *timebase.Translator {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := [2]timebase.Domain{from, to}
	tr := t.m[k]
	if tr == nil {
		tr = timebase.NewTranslator(from, to, window)
		t.m[k] = tr
		t.gen.Add(1)
	}
	return tr
}

// Lookup returns the translator between two domains in either direction.
func (t *Translators) Lookup(a, b timebase.Domain) (*timebase.Translator, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if tr := t.m[[2]timebase.Domain{a, b}]; tr != nil {
		return tr, true
	}
	tr := t.m[[2]timebase.Domain{b, a}]
	return tr, tr != nil
}

// ResetDomain forgets every model involving d (after a step of that clock).
func (t *Translators) ResetDomain(d timebase.Domain) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k, tr := range t.m {
		if k[0] == d || k[1] == d {
			tr.Reset()
		}
	}
}

// ToRealtime returns a function that moves a time of dom (a PHC) to REALTIME
// with the model the phc source keeps of it, looked up at each call: that
// source may start after the caller.
func (t *Translators) ToRealtime(dom timebase.Domain) func(int64) (int64, error) {
	return func(ns int64) (int64, error) {
		ts, err := t.Realtime(timebase.Timestamp{NS: ns, Domain: dom})
		if err != nil {
			return 0, fmt.Errorf("%s to realtime: %w (enable the phc source for this PHC)", dom, err)
		}
		return ts.NS, nil
	}
}

// errNoTranslation is a move between two domains no kept model connects.
var errNoTranslation = errors.New("no clock model connects the domains (yet)")

// Move moves ts to domain to through the models the clock and phc sources
// keep: directly, or through monotonic_raw (the clock source's reference) and
// REALTIME (a phc source's usual system clock), in up to three steps. The
// result's uncertainty adds every model's to ts's. It does not allocate when
// the models exist.
func (t *Translators) Move(ts timebase.Timestamp, to timebase.Domain) (timebase.Timestamp, error) {
	if ts.Domain == to {
		return ts, nil
	}
	const raw, rt = timebase.DomainMonotonicRaw, timebase.DomainRealtime
	paths := [...][3]timebase.Domain{
		{to}, {raw, to}, {rt, to}, {raw, rt, to}, {rt, raw, to},
	}
	err := errNoTranslation
	for _, path := range paths {
		cur, ok := ts, true
		for _, d := range path {
			if d == 0 || !ok {
				break
			}
			if d == cur.Domain || (d != to && d == ts.Domain) {
				ok = false
				break
			}
			tr, found := t.Lookup(cur.Domain, d)
			if !found {
				ok = false
				break
			}
			next, e := tr.Translate(cur)
			if e != nil {
				err, ok = e, false
				break
			}
			cur = next
			if d == to {
				return cur, nil
			}
		}
	}
	return timebase.Timestamp{}, err
}

// Realtime moves a timestamp of any system-clock domain (or of a PHC with a
// kept model) to REALTIME, through monotonic_raw where no direct model
// exists, with its uncertainty.
func (t *Translators) Realtime(ts timebase.Timestamp) (timebase.Timestamp, error) {
	return t.Move(ts, timebase.DomainRealtime)
}
