package status

import (
	"math"

	"github.com/monagent/monagent/judge"
	"github.com/prometheus/client_golang/prometheus"
)

var (
	stateDesc = prometheus.NewDesc("monagent_sync_state",
		"The judged clock's state: 1 for the current one, 0 for the others.", []string{"clock", "source", "state"}, nil)
	boundDesc = prometheus.NewDesc("monagent_clock_error_bound_seconds",
		"The largest error the clock can have against its reference, given what was measured (+Inf before any sample).", []string{"clock", "source"}, nil)
	offsetDesc = prometheus.NewDesc("monagent_clock_offset_seconds",
		"The clock's offset against its reference at its latest sample.", []string{"clock", "source"}, nil)
	changesDesc = prometheus.NewDesc("monagent_sync_state_changes_total",
		"State changes of the judged clock.", []string{"clock", "source"}, nil)
	lastDesc = prometheus.NewDesc("monagent_clock_last_sample_timestamp_seconds",
		"When the judged clock's latest sample was taken (Unix time).", []string{"clock", "source"}, nil)
)

// Judged collects the states, bounds and offsets of a judge.Set at each
// scrape; now is the time the bounds are taken at (REALTIME ns).
type Judged struct {
	Set *judge.Set
	Now func() int64
}

// Describe sends the descriptors of every metric Collect makes.
func (j Judged) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stateDesc, boundDesc, offsetDesc, changesDesc, lastDesc} {
		ch <- d
	}
}

// Collect sends the metrics of every judged clock.
func (j Judged) Collect(ch chan<- prometheus.Metric) {
	for _, v := range j.Set.Views(j.Now(), nil) {
		for _, st := range judge.States {
			val := 0.0
			if st == v.State {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, val, v.Clock, v.Source, st.String())
		}
		b := math.Inf(1)
		if v.BoundNS != math.MaxInt64 {
			b = seconds(v.BoundNS)
		}
		ch <- prometheus.MustNewConstMetric(boundDesc, prometheus.GaugeValue, b, v.Clock, v.Source)
		ch <- prometheus.MustNewConstMetric(changesDesc, prometheus.CounterValue, float64(v.Changes), v.Clock, v.Source)
		if v.LastSampleNS != 0 {
			ch <- prometheus.MustNewConstMetric(offsetDesc, prometheus.GaugeValue, seconds(v.OffsetNS), v.Clock, v.Source)
			ch <- prometheus.MustNewConstMetric(lastDesc, prometheus.GaugeValue, seconds(v.LastSampleNS), v.Clock, v.Source)
		}
	}
}

// seconds converts ns to the base unit at the edge, exactly for |ns| < 2⁵³.
func seconds(ns int64) float64 {
	return float64(ns/1e9) + float64(ns%1e9)/1e9
}

var (
	agreesDesc = prometheus.NewDesc("monagent_reference_agrees",
		"1 when the reference agrees with the majority of its clock's references, 0 when it is named a falseticker or the clock is disputed; absent when not cross-checked (the clock's only voting reference) or not voting.",
		[]string{"clock", "source"}, nil)
	combinedOffsetDesc = prometheus.NewDesc("monagent_clock_combined_offset_seconds",
		"The clock's offset by the vote across its references: the midpoint of the interval the agreeing references share (absent when disputed or none votes).", []string{"clock"}, nil)
	combinedBoundDesc = prometheus.NewDesc("monagent_clock_combined_error_bound_seconds",
		"The clock's error bound by the vote across its references: |combined offset| + the shared interval's half width (absent when disputed or none votes).", []string{"clock"}, nil)
	referencesDesc = prometheus.NewDesc("monagent_clock_references",
		"How many judged references the clock has.", []string{"clock"}, nil)
	agreeingDesc = prometheus.NewDesc("monagent_clock_agreeing_references",
		"How many of the clock's references agree (0 when disputed, or not cross-checked).", []string{"clock"}, nil)
	voteDesc = prometheus.NewDesc("monagent_clock_vote",
		"The vote across the clock's references: 1 for the current outcome (agreed, disputed, not_cross_checked, none), 0 for the others.", []string{"clock", "vote"}, nil)
)

// Votes are the outcomes of a clock's vote as Combined.Vote gives them, and
// their values of monagent_clock_vote's vote label.
var Votes = [...][2]string{{"agreed", "agreed"}, {"disputed", "disputed"}, {"not cross-checked", "not_cross_checked"}, {"none", "none"}}

// CrossCheck collects the vote across each clock's references from the
// /status document Doc makes at each scrape (its agrees and combined).
type CrossCheck struct {
	Doc func() Doc
}

// Describe sends the descriptors of every metric Collect makes.
func (c CrossCheck) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{agreesDesc, combinedOffsetDesc, combinedBoundDesc, referencesDesc, agreeingDesc, voteDesc} {
		ch <- d
	}
}

// Collect sends the cross-check's metrics.
func (c CrossCheck) Collect(ch chan<- prometheus.Metric) {
	d := c.Doc()
	for _, k := range d.Clocks {
		if k.Agrees == nil {
			continue
		}
		v := 0.0
		if *k.Agrees {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(agreesDesc, prometheus.GaugeValue, v, k.Clock, k.Source)
	}
	for _, k := range d.Combined {
		ch <- prometheus.MustNewConstMetric(referencesDesc, prometheus.GaugeValue, float64(k.References), k.Clock)
		ch <- prometheus.MustNewConstMetric(agreeingDesc, prometheus.GaugeValue, float64(k.Agreeing), k.Clock)
		for _, v := range Votes {
			val := 0.0
			if v[0] == k.Vote {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(voteDesc, prometheus.GaugeValue, val, k.Clock, v[1])
		}
		if k.ErrorBoundNS >= 0 {
			ch <- prometheus.MustNewConstMetric(combinedOffsetDesc, prometheus.GaugeValue, seconds(k.OffsetNS), k.Clock)
			ch <- prometheus.MustNewConstMetric(combinedBoundDesc, prometheus.GaugeValue, seconds(k.ErrorBoundNS), k.Clock)
		}
	}
}
