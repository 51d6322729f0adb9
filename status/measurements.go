package status

import (
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/prometheus/client_golang/prometheus"
)

// Measurement says how the latest records of one measurement appear on
// /metrics: each numeric field of the latest record of each series (the
// measurement and its Labels' values) is the metric
// monagent_<measurement>_<field>, converted to base units by its name's
// suffix (…_ns → …_seconds, …_ppb → …_ratio, …_s → …_seconds, …_ps →
// …_seconds); unsigned fields are counters (…_total), signed, float and
// boolean fields (0/1) gauges. A tag or string field in States is one
// series monagent_<measurement>_<key>{…, <key>="value"} 1; those in Info
// are labels of one series monagent_<measurement>_info 1. Other strings,
// and the fields in Skip (absolute stamps, sequence numbers), are left to
// the records.
type Measurement struct {
	Name   string
	Labels []string
	States []string
	Info   []string
	Skip   []string
	// Value, when set, turns a field into its metric instead (the sensors'
	// unit is a tag): the name's part after monagent_<measurement>_, the
	// value in base units, and false to leave the field out.
	Value func(tags []record.Tag, f record.Field) (string, float64, bool)
	// Counters are signed fields that count (…_total counters).
	Counters []string
	// RootDistance adds monagent_<measurement>_root_distance_seconds: the
	// record's root_delay_ns / 2 + root_dispersion_ns (RFC 5905's root
	// distance, what a client adds to its bound), when it has both.
	RootDistance bool
}

// labelOf is the Prometheus label a record tag becomes: `instance` (a
// daemon's name among several) would clash with the label Prometheus gives
// every target, so it is `daemon`.
func labelOf(tag string) string {
	if tag == "instance" {
		return "daemon"
	}
	return tag
}

// stamps are fields that are absolute times or identifiers, never gauges.
var stamps = []string{"t1_ns", "t2_ns", "t3_ns", "t4_ns", "phc_ns", "sys_ns", "kernel_ns", "clock_ns", "real_ns", "read_ns",
	"fix_time_ns", "ref_time_ns", "ingress_time_ns", "seq", "sequence", "correction_ns", "status_word"}

// Measurements is the table of every measurement on /metrics; the other
// measurements (events: GPIO edges, markers, sensor scans, extts, HCA, and
// what the judged clocks already give) stay in the records.
var Measurements = []Measurement{
	{Name: "clock_offset", Labels: []string{"clock", "ref"}},
	{Name: "timex", Info: []string{"status_flags"}, Counters: []string{"pps_jitter_count", "pps_calibration_count", "pps_error_count", "pps_stability_exceeded_count"}},
	{Name: "phc_offset", Labels: []string{"device", "clock", "clock_name"}, Info: []string{"method"}},
	{Name: "ntp_probe", Labels: []string{"server"}, RootDistance: true, Info: []string{"mode", "timestamps", "refid", "address"}},
	{Name: "chrony_tracking", Labels: []string{"instance"}, RootDistance: true, Info: []string{"reference_id", "reference"}},
	{Name: "chrony_source", Labels: []string{"instance", "source"}, States: []string{"state"}, Info: []string{"mode", "tx_timestamping", "rx_timestamping"},
		Counters: []string{"total_tx", "total_rx", "total_valid"}},
	{Name: "chrony_serverstats", Labels: []string{"instance"}},
	{Name: "ntpd_system", Labels: []string{"instance"}, RootDistance: true, Info: []string{"reference_id", "version"}},
	{Name: "ntpd_peer", Labels: []string{"instance", "peer", "association"}, RootDistance: true, States: []string{"selection"}, Info: []string{"reference_id"}},
	{Name: "ptp4l_current", Labels: []string{"instance"}},
	{Name: "ptp4l_parent", Labels: []string{"instance"}, Info: []string{"parent_port", "grandmaster"}},
	{Name: "ptp4l_time_status", Labels: []string{"instance"}, Info: []string{"gm_identity"}},
	{Name: "ptp4l_port", Labels: []string{"instance", "port"}, States: []string{"port_state"}},
	{Name: "ptp4l_port_stats", Labels: []string{"instance", "port"}},
	{Name: "ptp4l_port_service_stats", Labels: []string{"instance", "port"}},
	{Name: "ptp_probe", Info: []string{"master", "timestamps"}},
	{Name: "ptp_probe_stats", Info: []string{"master", "transport"}},
	{Name: "gnss", Labels: []string{"class", "device"}, Skip: []string{"lat", "lon", "alt_m"}},
	{Name: "pps_event", Labels: []string{"device", "name", "edge"}, Value: ppsPhase},
	{Name: "sensor", Labels: []string{"source", "device", "node", "sensor", "label"}, Info: []string{"kind", "unit"}, Value: sensorValue},
}

// ppsPhase is a PPS edge's kernel stamp as its distance from the nearest
// REALTIME second (the pulse's phase: what the judged pps clock's offset
// is made of), and its sequence number as a counter.
func ppsPhase(_ []record.Tag, f record.Field) (string, float64, bool) {
	switch f.Key {
	case "kernel_ns":
		p := f.I % 1e9
		if p >= 5e8 {
			p -= 1e9
		} else if p < -5e8 {
			p += 1e9
		}
		return "phase_seconds", float64(p) / 1e9, true
	case "sequence":
		return "sequence_total", float64(f.U), true
	}
	return "", 0, false
}

// sensorUnits are the sensors' units (docs/schema.md, sensor) in base units:
// the metric's name and the factor.
var sensorUnits = map[string]struct {
	name   string
	factor float64
}{
	"u°C": {"temperature_celsius", 1e-6}, "nV": {"voltage_volts", 1e-9}, "nA": {"current_amperes", 1e-9},
	"uW": {"power_watts", 1e-6}, "uJ": {"energy_joules", 1e-6}, "rpm": {"fan_rpm", 1}, "m%RH": {"humidity_ratio", 1e-5},
}

// sensorValue names a sensor's value by its unit tag, in base units.
func sensorValue(tags []record.Tag, f record.Field) (string, float64, bool) {
	if f.Key != "value" {
		return "", 0, false
	}
	u, ok := sensorUnits[record.Record{Tags: tags}.Tag("unit")]
	if !ok {
		return "value", float64(f.I), true
	}
	return u.name, float64(f.I) * u.factor, true
}

// MaxSeriesPerMeasurement bounds the series of one measurement on /metrics:
// records of a new series beyond it are counted
// (monagent_metrics_series_refused_total), not shown. Every measurement's
// series are per source (a server, a PHC, a port, a sensor, a chronyd
// source, at most 64 ntpd peers), never per event.
const MaxSeriesPerMeasurement = 256

// DefaultStaleAfter is how long a series stays on /metrics without a new
// record: a PHC unplugged, a server removed from chronyd.
const DefaultStaleAfter = 5 * time.Minute

// Latest holds the latest record of each series of the Measurements and
// collects them as metrics. Update is allocation-free once a series has
// been seen (TestLatestUpdateNoAlloc); Collect is safe beside it.
type Latest struct {
	// StaleAfter drops a series without a record for this long
	// (DefaultStaleAfter when 0).
	StaleAfter time.Duration

	spec        map[string]*measSpec
	mu          sync.Mutex
	series      []*latestSeries
	descs       map[string]*prometheus.Desc
	constLabels prometheus.Labels
	refusedDesc *prometheus.Desc
	refused     atomic.Uint64
}

type measSpec struct {
	Measurement
	n       int // series now
	labels  []string
	info    []string
	skip    map[string]bool
	counter map[string]bool
	inInfo  map[string]int
}

type latestSeries struct {
	m       *measSpec
	labels  []string // values of m.Labels
	info    []string // values of m.Info
	states  []string // values of m.States ("" absent)
	fields  []record.Field
	updated time.Time
}

// NewLatest returns an empty table of the Measurements; every metric carries
// the constant labels (the host's tags; none for nil), put in its
// descriptor once rather than wrapped at every scrape.
func NewLatest(constLabels prometheus.Labels) *Latest {
	l := &Latest{spec: map[string]*measSpec{}, descs: map[string]*prometheus.Desc{}, constLabels: constLabels,
		refusedDesc: prometheus.NewDesc("monagent_metrics_series_refused_total",
			"Records of a series beyond monagent's bound of series per measurement on /metrics (docs/schema.md), not shown.", nil, constLabels)}
	for _, m := range Measurements {
		s := &measSpec{Measurement: m, skip: map[string]bool{}, counter: map[string]bool{}, inInfo: map[string]int{}}
		for _, k := range m.Labels {
			s.labels = append(s.labels, labelOf(k))
		}
		for i, k := range m.Info {
			s.info = append(s.info, labelOf(k))
			s.inInfo[k] = i
		}
		for _, k := range append(append([]string(nil), stamps...), m.Skip...) {
			s.skip[k] = true
		}
		for _, k := range m.Counters {
			s.counter[k] = true
		}
		l.spec[m.Name] = s
	}
	return l
}

// Update takes the records of one collection: the latest record of each
// series replaces the one before.
func (l *Latest) Update(recs []record.Record) {
	var now time.Time
	for i := range recs {
		r := &recs[i]
		m := l.spec[r.Measurement]
		if m == nil {
			continue
		}
		if now.IsZero() {
			now = time.Now()
			l.mu.Lock()
		}
		s := l.find(m, r)
		if s == nil {
			continue
		}
		s.updated = now
		for j, k := range m.Info {
			s.info[j] = r.Tag(k)
		}
		for j, k := range m.States {
			s.states[j] = r.Tag(k)
		}
		s.fields = s.fields[:0]
		for _, f := range r.Fields {
			switch {
			case f.Kind == record.KindString:
				if j, ok := m.inInfo[f.Key]; ok {
					s.info[j] = f.S
				}
				for j, k := range m.States {
					if k == f.Key {
						s.states[j] = f.S
					}
				}
			case !m.skip[f.Key] || m.Value != nil:
				s.fields = append(s.fields, f)
			}
		}
	}
	if !now.IsZero() {
		l.mu.Unlock()
	}
}

// find is r's series, made on first sight (nil and counted beyond the
// bound).
func (l *Latest) find(m *measSpec, r *record.Record) *latestSeries {
next:
	for _, s := range l.series {
		if s.m != m {
			continue
		}
		for j, k := range m.Labels {
			if s.labels[j] != r.Tag(k) {
				continue next
			}
		}
		return s
	}
	if m.n >= MaxSeriesPerMeasurement {
		l.refused.Add(1)
		return nil
	}
	m.n++
	s := &latestSeries{m: m, labels: make([]string, len(m.Labels)), info: make([]string, len(m.Info)), states: make([]string, len(m.States))}
	for j, k := range m.Labels {
		s.labels[j] = strings.Clone(r.Tag(k))
	}
	l.series = append(l.series, s)
	return s
}

// Describe sends nothing: the metrics follow the records (an unchecked
// collector).
func (l *Latest) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest record of every series.
func (l *Latest) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(l.refusedDesc, prometheus.CounterValue, float64(l.refused.Load()))
	stale := l.StaleAfter
	if stale <= 0 {
		stale = DefaultStaleAfter
	}
	now := time.Now()
	// Made under the lock, sent after it: a collection's Update waits for
	// the metrics to be made, never for the scrape to read them.
	var out []prometheus.Metric
	l.mu.Lock()
	kept := l.series[:0]
	for _, s := range l.series {
		if now.Sub(s.updated) > stale {
			s.m.n--
			continue
		}
		kept = append(kept, s)
		l.collect(&out, s)
	}
	clear(l.series[len(kept):])
	l.series = kept
	l.mu.Unlock()
	for _, m := range out {
		ch <- m
	}
}

// collect makes one series' metrics.
func (l *Latest) collect(out *[]prometheus.Metric, s *latestSeries) {
	m := s.m
	prefix := "monagent_" + m.Name + "_"
	for _, f := range s.fields {
		var name string
		var typ prometheus.ValueType
		var v float64
		if m.Value != nil {
			n, val, ok := m.Value(s.tags(), f)
			if !ok {
				continue
			}
			name, typ, v = prefix+n, prometheus.GaugeValue, val
			if strings.HasSuffix(n, "_total") {
				typ = prometheus.CounterValue
			}
		} else {
			var ok bool
			if name, typ, v, ok = measurementMetric(prefix, f); !ok {
				continue
			}
			if m.counter[f.Key] {
				name, typ = name+"_total", prometheus.CounterValue
			}
		}
		*out = append(*out, l.metric(m.Name, name, m.labels, typ, v, s.labels))
	}
	if m.RootDistance {
		var delay, disp *record.Field
		for i := range s.fields {
			switch s.fields[i].Key {
			case "root_delay_ns":
				delay = &s.fields[i]
			case "root_dispersion_ns":
				disp = &s.fields[i]
			}
		}
		if delay != nil && disp != nil {
			*out = append(*out, l.metric(m.Name, prefix+"root_distance_seconds", m.labels, prometheus.GaugeValue, seconds(delay.I/2+disp.I), s.labels))
		}
	}
	for j, k := range m.States {
		if s.states[j] == "" {
			continue
		}
		lk := labelOf(k)
		*out = append(*out, l.metric(m.Name, prefix+k, append(m.labels[:len(m.labels):len(m.labels)], lk), prometheus.GaugeValue, 1,
			append(s.labels[:len(s.labels):len(s.labels)], s.states[j])))
	}
	if len(m.Info) > 0 {
		*out = append(*out, l.metric(m.Name, prefix+"info", append(m.labels[:len(m.labels):len(m.labels)], m.info...), prometheus.GaugeValue, 1,
			append(s.labels[:len(s.labels):len(s.labels)], s.info...)))
	}
}

// tags are the series' label and info tags, for a Value function.
func (s *latestSeries) tags() []record.Tag {
	t := make([]record.Tag, 0, len(s.labels)+len(s.info))
	for j, k := range s.m.Labels {
		t = append(t, record.Tag{Key: k, Value: s.labels[j]})
	}
	for j, k := range s.m.Info {
		t = append(t, record.Tag{Key: k, Value: s.info[j]})
	}
	return t
}

// metric is one metric, its descriptor made once per name.
func (l *Latest) metric(meas, name string, labels []string, typ prometheus.ValueType, v float64, values []string) prometheus.Metric {
	d := l.descs[name]
	if d == nil {
		d = prometheus.NewDesc(name, "The latest "+meas+" record (docs/schema.md).", labels, l.constLabels)
		l.descs[name] = d
	}
	m, err := prometheus.NewConstMetric(d, typ, v, values...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// measurementMetric is one field's metric in base units.
func measurementMetric(prefix string, f record.Field) (string, prometheus.ValueType, float64, bool) {
	name, scale := f.Key, 1.0
	for _, u := range [...]struct {
		suffix, to string
		scale      float64
	}{{"_ns", "_seconds", 1e-9}, {"_ps", "_seconds", 1e-12}, {"_ppb", "_ratio", 1e-9}, {"_per_s", "_per_second", 1}, {"_s", "_seconds", 1}} {
		if strings.HasSuffix(name, u.suffix) {
			name, scale = strings.TrimSuffix(name, u.suffix)+u.to, u.scale
			break
		}
	}
	switch f.Kind {
	case record.KindUint:
		return prefix + name + "_total", prometheus.CounterValue, float64(f.U) * scale, true
	case record.KindInt, record.KindBool:
		if scale == 1e-9 && f.Kind == record.KindInt {
			return prefix + name, prometheus.GaugeValue, seconds(f.I), true
		}
		return prefix + name, prometheus.GaugeValue, float64(f.I) * scale, true
	case record.KindFloat:
		if math.IsNaN(f.F) {
			return "", 0, 0, false
		}
		return prefix + name, prometheus.GaugeValue, f.F * scale, true
	}
	return "", 0, 0, false
}

var buildInfoDesc = prometheus.NewDesc("monagent_build_info",
	"1, labelled with the agent's version, the Go version it was built with and its target (GOOS/GOARCH, GOARM's v7).",
	[]string{"version", "goversion", "target"}, nil)

// BuildInfo collects monagent_build_info.
type BuildInfo struct {
	Version, GoVersion, Target string
}

// Describe sends the descriptor.
func (b BuildInfo) Describe(ch chan<- *prometheus.Desc) { ch <- buildInfoDesc }

// Collect sends the one series.
func (b BuildInfo) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1, b.Version, b.GoVersion, b.Target)
}

// LabelNames are the labels the metrics on /metrics carry of their own
// (the judged clocks', the self-metrics' tags and the Measurements'): the
// names a host tag may not take.
func LabelNames() []string {
	names := []string{"clock", "source", "state", "vote", "output", "receiver", "receiver_host", "local_state", "version", "goversion", "target"}
	for _, m := range Measurements {
		for _, l := range [][]string{m.Labels, m.States, m.Info} {
			for _, k := range l {
				names = append(names, labelOf(k))
			}
		}
	}
	return names
}
