package status

import (
	"strings"
	"sync/atomic"

	"github.com/monagent/monagent/record"
	"github.com/prometheus/client_golang/prometheus"
)

// Records exposes the agent's latest self-metrics records (monagent,
// monagent_source, monagent_spool, monagent_influx, monagent_output: the
// counters docs/schema.md lists) to Prometheus, so that a board scraped by
// Prometheus alone sees what InfluxDB would: each numeric field is the
// metric <measurement>_<field> with the record's tags (but host) as labels;
// unsigned fields are counters (<…>_total) unless declared levels
// (record.Level: gauges), signed ones gauges; a field in ns is converted to seconds (…_ns → …_seconds); a
// state string (a field named state or …_state) is one series with that
// state as its label; other strings (errors' texts) are left to the logs.
// The zero value is ready; Set is safe beside scrapes.
type Records struct {
	cur atomic.Pointer[[]record.Record]
}

// Set replaces the records a scrape sees.
func (r *Records) Set(recs []record.Record) { r.cur.Store(&recs) }

// Describe sends nothing: the metrics follow the records (an unchecked
// collector).
func (r *Records) Describe(chan<- *prometheus.Desc) {}

// Collect sends the metrics of the latest records.
func (r *Records) Collect(ch chan<- prometheus.Metric) {
	p := r.cur.Load()
	if p == nil {
		return
	}
	for _, rec := range *p {
		if !strings.HasPrefix(rec.Measurement, "monagent") {
			continue // measurements, not the agent's counters
		}
		var keys, vals []string
		for _, t := range rec.Tags {
			if t.Key != "host" {
				keys, vals = append(keys, t.Key), append(vals, t.Value)
			}
		}
		for _, f := range rec.Fields {
			name, typ, v, ok := metricOf(rec.Measurement, f)
			if !ok {
				continue
			}
			k, lv := keys, vals
			if typ == prometheus.UntypedValue { // a state: one series labelled with it
				k, lv = append(k[:len(k):len(k)], f.Key), append(lv[:len(lv):len(lv)], f.S)
				typ = prometheus.GaugeValue
			}
			desc := prometheus.NewDesc(name, "monagent self-metrics: "+rec.Measurement+" "+f.Key+" (docs/schema.md)", k, nil)
			m, err := prometheus.NewConstMetric(desc, typ, v, lv...)
			if err != nil {
				m = prometheus.NewInvalidMetric(desc, err)
			}
			ch <- m
		}
	}
}

// metricOf is the metric of one field; UntypedValue marks a state.
func metricOf(measurement string, f record.Field) (string, prometheus.ValueType, float64, bool) {
	name := measurement + "_" + f.Key
	switch f.Kind {
	case record.KindUint:
		v := float64(f.U)
		if strings.HasSuffix(f.Key, "_ns") {
			name, v = strings.TrimSuffix(name, "_ns")+"_seconds", v/1e9
		}
		if f.Level {
			return name, prometheus.GaugeValue, v, true
		}
		return name + "_total", prometheus.CounterValue, v, true
	case record.KindInt:
		if strings.HasSuffix(f.Key, "_ns") {
			return strings.TrimSuffix(name, "_ns") + "_seconds", prometheus.GaugeValue, seconds(f.I), true
		}
		return name, prometheus.GaugeValue, float64(f.I), true
	case record.KindFloat:
		return name, prometheus.GaugeValue, f.F, true
	case record.KindString:
		if f.Key == "state" || strings.HasSuffix(f.Key, "_state") {
			return name, prometheus.UntypedValue, 1, true
		}
	}
	return "", 0, 0, false
}
