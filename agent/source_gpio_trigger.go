package agent

import (
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/timebase"
)

// triggerRescan is how often a trigger that found no sensor lists the sysfs
// trees again (only when an edge would read them).
const triggerRescan = 10 * time.Second

// gpioTrigger is one gpio.triggers rule, attached to its line. Its sensors
// are read on the collection goroutine (gpioSource.emit), never on the
// reader goroutine that drains the kernel's queue: a slow sysfs read cannot
// stall edge reading. read_delay_ns (REALTIME when the last sensor was read
// minus the edge's REALTIME) therefore includes the wait for the next
// collection, up to gpio.interval: set a short gpio.interval for readings
// close to their edges. Everything here runs on the collection goroutine.
type gpioTrigger struct {
	cfg  GPIOTriggerConfig
	edge gpio.EdgeDetect

	found *sensors.Selection // its sensors, each with its field's key

	tags collect.HostTags // trigger, chip, line, edge (edgeTags)

	fired    bool
	lastEdge int64 // kernel stamp of the last edge that triggered a reading

	readings, skipped, readErrors uint64
}

func newGPIOTrigger(cfg GPIOTriggerConfig, fs sensors.FS, now func() time.Time) *gpioTrigger {
	edge, _ := gpio.ParseEdgeDetect(cfg.Edge) // checked
	return &gpioTrigger{cfg: cfg, edge: edge,
		found: sensors.NewSelection(func() (sensors.Matched, error) { return fs.Match(cfg.Sensors) }, now),
		tags:  edgeTags(record.Tag{Key: "trigger", Value: cfg.Name}, record.Tag{Key: "chip", Value: cfg.Chip}, record.Tag{Key: "line", Value: strconv.Itoa(cfg.Line)})}
}

// attachTriggers ties the triggers of the source's lines to them and lists
// their sensors; a trigger without sensors is logged (it lists them again
// when an edge comes, every triggerRescan).
func (d *gpioSource) attachTriggers(trs []GPIOTriggerConfig, fs sensors.FS, log *slog.Logger) {
	for _, c := range trs {
		if c.Chip != d.chip {
			continue
		}
		l := d.line(uint32(c.Line))
		if l == nil {
			continue
		}
		tr := newGPIOTrigger(c, fs, time.Now)
		err := tr.found.Scan()
		if log != nil && (err != nil || len(tr.found.Sensors) == 0) {
			log.Warn("gpio trigger: no sensor to read yet", "trigger", c.Name, "sensors", c.Sensors, "sysfs", fs.Sys, "err", err)
		}
		l.triggers = append(l.triggers, tr)
	}
}

// Close closes every trigger's sensor files.
func (d *gpioSource) Close() error {
	var errs []error
	for _, l := range d.lines {
		for _, tr := range l.triggers {
			errs = append(errs, tr.found.Close())
		}
	}
	return errors.Join(errs...)
}

// fire handles one edge of the trigger's line, placed at REALTIME t: an
// edge the rule does not select is ignored; one within min_interval (by
// kernel stamp) of the last edge that triggered a reading is skipped and
// counted; otherwise the sensors are read and one gpio_trigger record is
// added at t. A sensor that fails is left out of the record and counted.
func (tr *gpioTrigger) fire(b *collect.Batch, e *gpioEdge, t int64) {
	if !tr.edge.Detects(e.ev.Edge) {
		return
	}
	if tr.fired && e.ev.TimestampNS-tr.lastEdge < int64(tr.cfg.MinInterval) {
		tr.skipped++
		return
	}
	tr.fired, tr.lastEdge = true, e.ev.TimestampNS
	// A sensor gone at the last edge (its chip removed) is listed again
	// at once, to be read again once it is back; no sensor at all, every
	// triggerRescan.
	if tr.found.Gone() || len(tr.found.Sensors) == 0 && tr.found.Due(triggerRescan) {
		tr.found.Scan()
	}
	f := make([]record.Field, 0, len(tr.found.Sensors)+2)
	for i, x := range tr.found.Sensors {
		v, err := x.Read()
		if err != nil {
			tr.readErrors++
			continue
		}
		f = append(f, record.Int(tr.found.Keys[i], v))
	}
	read := timebase.RealtimeNS()
	f = append(f, record.Int("read_delay_ns", read-t), record.Int("kernel_ns", e.ev.TimestampNS))
	tr.readings++
	b.Records = append(b.Records, record.Record{Measurement: "gpio_trigger", Tags: tr.tags.Of(b.Host, edgeIndex(e.ev.Edge)), Fields: f, TimeNS: t})
}

// self is the trigger's self-metrics: trigger_<name>_readings, _skipped
// (rate limit), _read_errors, _scan_errors and _sensors.
func (tr *gpioTrigger) self(f []record.Field) []record.Field {
	p := "trigger_" + tr.cfg.Name + "_"
	return append(f, record.Uint(p+"readings", tr.readings), record.Uint(p+"skipped", tr.skipped),
		record.Uint(p+"read_errors", tr.readErrors), record.Uint(p+"scan_errors", tr.found.ScanFailures()),
		record.Int(p+"sensors", int64(len(tr.found.Sensors))))
}
