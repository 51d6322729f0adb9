package agent

import (
	"errors"
	"log/slog"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

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
	fs   sensors.FS
	now  func() time.Time // the rescan's clock

	sensors  []*sensors.Sensor
	keys     []string // the field of each sensor: source/device/name (@node when names clash)
	lastScan time.Time

	base [2][]record.Tag // rising, falling: trigger, chip, line, edge
	tags [2][]record.Tag // with the host tag, sorted
	host string

	fired    bool
	lastEdge int64 // kernel stamp of the last edge that triggered a reading

	readings, skipped, readErrors, scanErrors uint64
}

func newGPIOTrigger(cfg GPIOTriggerConfig, fs sensors.FS, now func() time.Time) *gpioTrigger {
	tr := &gpioTrigger{cfg: cfg, edge: gpioEdges[cfg.Edge], fs: fs, now: now}
	base := []record.Tag{{Key: "trigger", Value: cfg.Name}, {Key: "chip", Value: cfg.Chip}, {Key: "line", Value: strconv.Itoa(cfg.Line)}}
	tr.base[0] = append(slices.Clip(base), record.Tag{Key: "edge", Value: "rising"})
	tr.base[1] = append(slices.Clip(base), record.Tag{Key: "edge", Value: "falling"})
	return tr
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
		err := tr.scan()
		if log != nil && (err != nil || len(tr.sensors) == 0) {
			log.Warn("gpio trigger: no sensor to read yet", "trigger", c.Name, "sensors", c.Sensors, "sysfs", fs.Sys, "err", err)
		}
		l.triggers = append(l.triggers, tr)
	}
}

// closeTriggers closes every trigger's sensor files.
func (d *gpioSource) closeTriggers() error {
	var errs []error
	for _, l := range d.lines {
		for _, tr := range l.triggers {
			errs = append(errs, sensors.CloseAll(tr.sensors))
		}
	}
	return errors.Join(errs...)
}

// scan lists the sensors matching the trigger's patterns.
func (tr *gpioTrigger) scan() error {
	sensors.CloseAll(tr.sensors)
	tr.sensors, tr.keys = tr.sensors[:0], tr.keys[:0]
	tr.lastScan = tr.now()
	var errs []error
	for _, f := range []struct {
		source string
		find   func() ([]*sensors.Sensor, error)
	}{{"hwmon", tr.fs.Hwmon}, {"thermal", tr.fs.Thermal}, {"iio", tr.fs.IIO}} {
		if !tr.wants(f.source) {
			continue
		}
		found, err := f.find()
		if err != nil {
			tr.scanErrors++
			errs = append(errs, err)
		}
		for _, x := range found {
			if tr.matches(x) {
				tr.sensors = append(tr.sensors, x)
			} else {
				x.Close()
			}
		}
	}
	slices.SortStableFunc(tr.sensors, func(a, b *sensors.Sensor) int { return strings.Compare(sensorID(a), sensorID(b)) })
	count := map[string]int{}
	for _, x := range tr.sensors {
		count[sensorID(x)]++
	}
	for _, x := range tr.sensors {
		k := sensorID(x)
		if count[k] > 1 { // two chips of one name: told apart by their sysfs node
			k = x.Source + "/" + x.Device + "@" + x.Node + "/" + x.Name
		}
		tr.keys = append(tr.keys, k)
	}
	return errors.Join(errs...)
}

func sensorID(x *sensors.Sensor) string { return x.Source + "/" + x.Device + "/" + x.Name }

// wants says whether a pattern can match a sensor of source.
func (tr *gpioTrigger) wants(source string) bool {
	for _, p := range tr.cfg.Sensors {
		src, _, _ := strings.Cut(p, "/")
		if ok, _ := path.Match(src, source); ok {
			return true
		}
	}
	return false
}

func (tr *gpioTrigger) matches(x *sensors.Sensor) bool {
	id := sensorID(x)
	for _, p := range tr.cfg.Sensors {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

// fire handles one edge of the trigger's line, placed at REALTIME t: an
// edge the rule does not select is ignored; one within min_interval (by
// kernel stamp) of the last edge that triggered a reading is skipped and
// counted; otherwise the sensors are read and one gpio_trigger record is
// added at t. A sensor that fails is left out of the record and counted.
func (tr *gpioTrigger) fire(b *Batch, e *gpioEdge, t int64) {
	if uint8(tr.edge)&uint8(e.ev.Edge) == 0 {
		return
	}
	if tr.fired && e.ev.TimestampNS-tr.lastEdge < int64(tr.cfg.MinInterval) {
		tr.skipped++
		return
	}
	tr.fired, tr.lastEdge = true, e.ev.TimestampNS
	if len(tr.sensors) == 0 && tr.now().Sub(tr.lastScan) >= triggerRescan {
		tr.scan()
	}
	f := make([]record.Field, 0, len(tr.sensors)+2)
	for i, x := range tr.sensors {
		v, err := x.Read()
		if err != nil {
			tr.readErrors++
			continue
		}
		f = append(f, record.Int(tr.keys[i], v))
	}
	read, _ := timebase.Realtime.Now()
	f = append(f, record.Int("read_delay_ns", read-t), record.Int("kernel_ns", e.ev.TimestampNS))
	tr.readings++
	if tr.host != b.host || tr.tags[0] == nil {
		for i, base := range tr.base {
			tags := append([]record.Tag{{Key: "host", Value: b.host}}, base...)
			slices.SortFunc(tags, func(a, b record.Tag) int { return strings.Compare(a.Key, b.Key) })
			tr.tags[i] = tags
		}
		tr.host = b.host
	}
	tags := tr.tags[0]
	if e.ev.Edge == gpio.EdgeFalling {
		tags = tr.tags[1]
	}
	b.Records = append(b.Records, record.Record{Measurement: "gpio_trigger", Tags: tags, Fields: f, TimeNS: t})
}

// self is the trigger's self-metrics: trigger_<name>_readings, _skipped
// (rate limit), _read_errors, _scan_errors and _sensors.
func (tr *gpioTrigger) self(f []record.Field) []record.Field {
	p := "trigger_" + tr.cfg.Name + "_"
	return append(f, record.Uint(p+"readings", tr.readings), record.Uint(p+"skipped", tr.skipped),
		record.Uint(p+"read_errors", tr.readErrors), record.Uint(p+"scan_errors", tr.scanErrors),
		record.Int(p+"sensors", int64(len(tr.sensors))))
}
