package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/monagent/monagent/stats"
)

// DefaultWindowFraction is the matching window, when none is given, as a
// fraction of the median interval between the reference board's events: 0.4
// of a square wave's edge interval (or of a PPS second) keeps every pair
// within reach of one edge only (stats.Match wants under half the period).
const DefaultWindowFraction = 0.4

// MatchOptions configure RunMatch: events of Query.Measurement whose tag Tag
// is Ref form the reference stream, those whose Tag is each of Others the
// other streams; each other stream is paired with the reference by
// stats.Match and its offsets are the reference study's eq. 3,
// TS_other − (TS_ref + DeltaISR).
type MatchOptions struct {
	Tag    string
	Ref    string
	Others []string
	// TimeField is the field holding each event's time (e.g. "global_ns",
	// the HCA global timeline); "" uses the record's time.
	TimeField string
	// Window (ns) is how far apart two events may be and still pair; 0:
	// DefaultWindowFraction of the reference's median event interval.
	Window int64
	// DeltaISR (ns) is the other board's interrupt latency minus the
	// reference's, measured in a calibration capture (stats.EstimateDelta).
	DeltaISR int64
	// Piecewise places each event's hca_local_ns on the global timeline
	// between its host's hca_model records (hca.Interpolate) instead of
	// using the recorded global_ns; TimeField must be global_ns. See
	// piecewise.go for the choice of models.
	Piecewise bool
}

// ParseMatch parses "TAG=A,B[,C...]": A is the reference, B, C... are
// matched against it.
func ParseMatch(spec string) (MatchOptions, error) {
	tag, vals, ok := strings.Cut(spec, "=")
	vs := strings.Split(vals, ",")
	if !ok || tag == "" || len(vs) < 2 || slices.Contains(vs, "") {
		return MatchOptions{}, fmt.Errorf("--match %q: want TAG=REF,OTHER[,OTHER...], e.g. host=b1,b2", spec)
	}
	for i, v := range vs {
		if slices.Contains(vs[:i], v) {
			return MatchOptions{}, fmt.Errorf("--match %q: %s=%s is named twice", spec, tag, v)
		}
	}
	return MatchOptions{Tag: tag, Ref: vs[0], Others: vs[1:]}, nil
}

// MatchInfo describes one pairing; it is the "match" object of the JSON.
type MatchInfo struct {
	Reference  string `json:"reference"` // tag=value
	Other      string `json:"other"`
	TimeField  string `json:"time_field"` // "time": the record's time
	WindowNS   int64  `json:"window_ns"`
	DeltaISRNS int64  `json:"delta_isr_ns"`
	EventsRef  int    `json:"events_reference"`
	EventsOth  int    `json:"events_other"`
	Pairs      int    `json:"pairs"`
	UnmatchedR int    `json:"unmatched_reference"`
	UnmatchedO int    `json:"unmatched_other"`
	// With a time field that has a bound field (global_ns:
	// global_bound_ns), the bound of each pair's offset is the sum of its
	// two events' bounds; their mean and maximum over the pairs having
	// both. Absent without bounds.
	BoundField  string   `json:"bound_field,omitempty"`
	BoundPairs  int      `json:"bound_pairs,omitempty"`
	BoundMeanNS *float64 `json:"bound_mean_ns,omitempty"`
	BoundMaxNS  *int64   `json:"bound_max_ns,omitempty"`
	DupEvents   int      `json:"duplicate_events,omitempty"` // equal event times dropped (first kept)
	// With --piecewise: Placement is "piecewise" (the times are the events'
	// hca_local_ns placed between their hosts' hca_model records, the bounds
	// hca.Interpolate's); over both streams, the events skipped for want of
	// a model (their host shipped no hca_model records) and of hca_local_ns,
	// and those placed outside the models' anchors by the nearest model
	// alone; and how each stream's hosts were placed.
	Placement     string `json:"placement,omitempty"`
	EventsNoModel *int   `json:"events_no_model,omitempty"`
	EventsNoLocal *int   `json:"events_no_hca_local,omitempty"`
	EventsOutside *int   `json:"events_outside_models,omitempty"`
	PlacedRef     string `json:"placement_reference,omitempty"`
	PlacedOth     string `json:"placement_other,omitempty"`
}

// events is one board's event stream: times sorted and distinct, and the
// bound of each (-1: none).
type events struct {
	t     []int64
	bound []int64
	dups  int
}

// boundField names the field with the bound of timeField's placements
// (global_ns: global_bound_ns), "" for the record time.
func boundField(timeField string) string {
	if timeField == "" {
		return ""
	}
	return strings.TrimSuffix(timeField, "_ns") + "_bound_ns"
}

// MatchSeries pairs the event series (from a Collector grouped by o.Tag,
// values the event times) and returns one offset series per other stream,
// its MatchInfo, and the error naming what is missing. bounds, optional, are
// the same records' bound field, grouped alike.
func MatchSeries(evs, bounds []*Series, o MatchOptions) ([]*Series, []*MatchInfo, error) {
	if o.Window < 0 {
		return nil, nil, fmt.Errorf("match: window %s: must be positive", time.Duration(o.Window))
	}
	byVal := map[string]*Series{}
	var found []string
	for _, s := range evs {
		if len(s.Tags) == 1 && s.Tags[0].Key == o.Tag {
			byVal[s.Tags[0].Value] = s
			found = append(found, s.Tags[0].Value)
		}
	}
	bnd := map[string]*Series{}
	for _, s := range bounds {
		if len(s.Tags) == 1 && s.Tags[0].Key == o.Tag {
			bnd[s.Tags[0].Value] = s
		}
	}
	stream := func(v string) (events, error) {
		s := byVal[v]
		if s == nil || len(s.X) == 0 {
			have := "none has the tag"
			if len(found) > 0 {
				have = "found " + o.Tag + "=" + strings.Join(found, ", ")
			}
			return events{}, fmt.Errorf("match: no events with %s=%s (%s)", o.Tag, v, have)
		}
		var bt map[int64]int64
		if b := bnd[v]; b != nil {
			bt = make(map[int64]int64, len(b.T))
			for i, t := range b.T {
				bt[t] = b.X[i]
			}
		}
		idx := make([]int, len(s.X))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(i, j int) bool { return s.X[idx[i]] < s.X[idx[j]] })
		var e events
		for _, k := range idx {
			if n := len(e.t); n > 0 && s.X[k] == e.t[n-1] {
				e.dups++
				continue
			}
			b, ok := bt[s.T[k]]
			if !ok {
				b = -1
			}
			e.t = append(e.t, s.X[k])
			e.bound = append(e.bound, b)
		}
		return e, nil
	}
	ref, err := stream(o.Ref)
	if err != nil {
		return nil, nil, err
	}
	window := o.Window
	if window == 0 {
		if len(ref.t) < 2 {
			return nil, nil, fmt.Errorf("match: one event with %s=%s: too few for a window from its interval; give --window", o.Tag, o.Ref)
		}
		window = max(int64(DefaultWindowFraction*float64(medianInterval(ref.t))), 1)
	}
	tf := o.TimeField
	if tf == "" {
		tf = "time"
	}
	var out []*Series
	var infos []*MatchInfo
	for _, ov := range o.Others {
		oth, err := stream(ov)
		if err != nil {
			return nil, nil, err
		}
		m, err := stats.Match(ref.t, oth.t, window)
		if err != nil {
			return nil, nil, err
		}
		name := fmt.Sprintf("%s=%s vs %s=%s", o.Tag, o.Ref, o.Tag, ov)
		info := &MatchInfo{Reference: o.Tag + "=" + o.Ref, Other: o.Tag + "=" + ov, TimeField: tf, WindowNS: window, DeltaISRNS: o.DeltaISR,
			EventsRef: len(ref.t), EventsOth: len(oth.t), Pairs: len(m.Pairs), UnmatchedR: m.UnmatchedA, UnmatchedO: m.UnmatchedB,
			DupEvents: ref.dups + oth.dups}
		if len(m.Pairs) == 0 {
			return nil, nil, fmt.Errorf("match %s: no pair of events within the window %s (%d and %d events)", name, time.Duration(window), len(ref.t), len(oth.t))
		}
		if bnd[o.Ref] != nil && bnd[ov] != nil {
			var sum float64
			var mx int64
			for _, p := range m.Pairs {
				i, _ := slices.BinarySearch(ref.t, p.A)
				j, _ := slices.BinarySearch(oth.t, p.B)
				if ref.bound[i] < 0 || oth.bound[j] < 0 {
					continue
				}
				b := ref.bound[i] + oth.bound[j]
				sum += float64(b)
				mx = max(mx, b)
				info.BoundPairs++
			}
			if info.BoundPairs > 0 {
				mean := sum / float64(info.BoundPairs)
				info.BoundField, info.BoundMeanNS, info.BoundMaxNS = boundField(o.TimeField), &mean, &mx
			}
		}
		s := &Series{Tags: []Tag{{"match", name}}, X: m.Offsets(o.DeltaISR)}
		for _, p := range m.Pairs {
			s.T = append(s.T, p.A)
		}
		out = append(out, s)
		infos = append(infos, info)
	}
	return out, infos, nil
}

// RunMatch reads the events of q.Measurement (q.Where applies; Field and
// GroupBy are set from o), pairs them, and writes the offsets' report as Run
// does: series "match TAG=REF vs TAG=OTHER", with the pairing's counts on
// errw, in the notes and in the JSON's "match" object.
func RunMatch(ctx context.Context, in Input, q Query, o MatchOptions, ro RunOptions, out, errw io.Writer) error {
	if len(o.Others) == 0 || o.Tag == "" || o.Ref == "" {
		return errors.New("match: a tag, a reference and at least one other value are required")
	}
	if o.Window < 0 {
		return fmt.Errorf("match: window %s: must be positive", time.Duration(o.Window))
	}
	if o.Piecewise && o.TimeField != "global_ns" {
		return fmt.Errorf("match: piecewise placement is on the global timeline: the time field must be global_ns, not %q", o.TimeField)
	}
	if err := in.rereadable(); err != nil {
		return err
	}
	q.Field, q.TimeValue, q.GroupBy = o.TimeField, o.TimeField == "", []string{o.Tag}
	var evs, bounds []*Series
	var per map[string]*placement
	var err error
	if o.Piecewise {
		evs, bounds, per, err = readPiecewise(ctx, in, q, o, errw)
	} else {
		evs, err = read(ctx, in, q, errw)
	}
	if err != nil {
		return err
	}
	if bf := boundField(o.TimeField); bf != "" && !o.Piecewise {
		bq := q
		bq.Field = bf
		if bounds, err = readOptional(ctx, in, bq, io.Discard); err != nil {
			return err
		}
	}
	series, infos, err := MatchSeries(evs, bounds, o)
	if err != nil {
		return err
	}
	rs := make([]*Result, len(series))
	for i, s := range series {
		r, err := Compute(s, ro.Options)
		if err != nil {
			return err
		}
		in := infos[i]
		if o.Piecewise {
			pr, po := per[o.Ref], per[strings.TrimPrefix(in.Other, o.Tag+"=")]
			nm, nl, no := pr.noModel+po.noModel, pr.noLocal+po.noLocal, pr.outside+po.outside
			in.Placement, in.EventsNoModel, in.EventsNoLocal, in.EventsOutside = "piecewise", &nm, &nl, &no
			in.PlacedRef, in.PlacedOth = pr.describeHosts(), po.describeHosts()
			if in.BoundMeanNS != nil {
				in.BoundField = "piecewise_bound_ns"
			}
		}
		r.name, r.Match = "match "+s.Tags[0].Value, in
		msg := fmt.Sprintf("%d pairs of %d and %d events; unmatched: %d of %s, %d of %s (window %s, Δ_ISR %s, times: %s)",
			in.Pairs, in.EventsRef, in.EventsOth, in.UnmatchedR, in.Reference, in.UnmatchedO, in.Other,
			time.Duration(in.WindowNS), time.Duration(in.DeltaISRNS), in.TimeField)
		r.Notes = append([]string{msg}, r.Notes...)
		fmt.Fprintf(errw, "%s: %s\n", r.name, msg)
		if in.BoundMeanNS != nil {
			b := fmt.Sprintf("bound of the offsets (%s of both events): mean %s, max %s over %d pairs",
				in.BoundField, stats.FormatNS(*in.BoundMeanNS), stats.FormatNS(float64(*in.BoundMaxNS)), in.BoundPairs)
			r.note(b)
		}
		if in.Placement == "piecewise" {
			r.note(fmt.Sprintf("times placed piecewise between hca_model records (hca.Interpolate): %s; %s; skipped %d events without a model, %d without hca_local_ns; %d placed outside the models' anchors by the nearest model",
				in.PlacedRef, in.PlacedOth, *in.EventsNoModel, *in.EventsNoLocal, *in.EventsOutside))
		}
		if in.DupEvents > 0 {
			r.note(fmt.Sprintf("%d events with a time equal to another's dropped", in.DupEvents))
		}
		rs[i] = r
	}
	return output(q.Measurement, series, rs, ro, out, errw)
}
