package report

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// Piecewise placement (MatchOptions.Piecewise, --piecewise): instead of the
// global_ns each agent recorded with the model current at the event, every
// event's hca_local_ns x is placed post hoc between the hca_model records
// its host shipped before and after it, by hca.Interpolate (Intel Trace
// Collector's piecewise correction): global = x − offset, bound = the
// blend's bound.
//
// Which models place a host's events:
//   - a host that shipped hca_sync records, or hca_model records for
//     several ranks, or for rank 0, is rank 0, the driver: its clock is the
//     global timeline (global = x, bound 0). rank 0 ships every other rank's
//     model under its own host; those copies are never used, each rank's own
//     are.
//   - any other host shipped the models of its own rank only (one rank tag):
//     those, ordered by their anchors mean_x_ns. x between two anchors is
//     blended; x before the first or after the last anchor is placed by that
//     model alone (counted as outside the models).
//   - a host with no hca_model record (and no hca_sync) cannot be placed: its
//     events are skipped and counted; a stream left with no event fails with
//     a message naming why.
//
// The models are read without --where, --start and --stop (an event near the
// range's edge needs the model before or after it). Events without
// hca_local_ns are skipped and counted. The bound is the models' only: the
// recorded global_bound_ns also holds the stamp's move to MONOTONIC_RAW,
// which the records do not keep apart.

// modelFieldNames are the hca_model fields a timebase.LinearModel is made
// of; the first four are required.
var modelFieldNames = []string{"slope", "intercept_ns", "origin_ns", "mean_x_ns", "slope_err", "residual_ns", "points", "floor_ns"}

// hostPlacer places one host's local times.
type hostPlacer struct {
	driver bool
	rank   string
	models []timebase.LinearModel // sorted by MeanX, distinct anchors
}

// place returns the global time and bound of local time x, and whether x
// lies outside the models' anchors (placed by the nearest model alone).
func (p *hostPlacer) place(x int64) (global, bound int64, outside bool) {
	if p.driver {
		return x, 0, false
	}
	ms := p.models
	if len(ms) == 1 {
		off, b := hca.Interpolate(ms[0], ms[0], x)
		return x - off, b, x != ms[0].MeanX
	}
	// k: the first anchor after x, kept within 1..len-1 so that before and
	// after are neighbours; outside the span Interpolate uses the nearest.
	k := sort.Search(len(ms), func(i int) bool { return ms[i].MeanX > x })
	k = min(max(k, 1), len(ms)-1)
	off, b := hca.Interpolate(ms[k-1], ms[k], x)
	return x - off, b, x < ms[0].MeanX || x > ms[len(ms)-1].MeanX
}

// describe says how a host's events are placed.
func (p *hostPlacer) describe() string {
	if p == nil {
		return "no hca_model records"
	}
	if p.driver {
		return "rank 0 (the global timeline)"
	}
	return fmt.Sprintf("rank %s: %d models", p.rank, len(p.models))
}

// placers builds each host's placer from hca_model series (grouped by
// host and rank, read with unrounded values, one per field in
// modelFieldNames' order) and the hosts that shipped hca_sync records.
func placers(fields map[string][]*Series, syncHosts []string) map[string]*hostPlacer {
	type rec struct {
		t int64
		m timebase.LinearModel
	}
	// series name → field → record time → value: the exact integer (ns
	// fields beyond 2^53 lose nanoseconds as float64) and the unrounded one
	type value struct {
		i int64
		f float64
	}
	val := map[string]map[string]map[int64]value{}
	for f, ss := range fields {
		for _, s := range ss {
			byT := map[int64]value{}
			for i, t := range s.T {
				v := value{s.X[i], float64(s.X[i])}
				if s.f != nil {
					v.f = s.f[i]
				}
				byT[t] = v
			}
			if val[s.Name()] == nil {
				val[s.Name()] = map[string]map[int64]value{}
			}
			val[s.Name()][f] = byT
		}
	}
	ranks := map[string]map[string][]rec{} // host → rank → models
	for _, s := range fields["slope"] {
		host, rank := tagValue(s.Tags, "host"), tagValue(s.Tags, "rank")
		if host == "" {
			continue
		}
		v := val[s.Name()]
	records:
		for _, t := range s.T {
			var x [8]value
			for i, f := range modelFieldNames {
				var ok bool
				if x[i], ok = v[f][t]; !ok && i < 4 {
					continue records
				}
			}
			m := timebase.LinearModel{Slope: x[0].f, Intercept: x[1].i, Origin: x[2].i, MeanX: x[3].i,
				SlopeErr: x[4].f, ResidualNS: x[5].f, N: int(x[6].i), FloorNS: x[7].i}
			if ranks[host] == nil {
				ranks[host] = map[string][]rec{}
			}
			ranks[host][rank] = append(ranks[host][rank], rec{t, m})
		}
	}
	out := map[string]*hostPlacer{}
	for _, h := range syncHosts {
		out[h] = &hostPlacer{driver: true, rank: "0"}
	}
	for host, rs := range ranks {
		if out[host] != nil {
			continue
		}
		if _, zero := rs["0"]; zero || len(rs) > 1 {
			out[host] = &hostPlacer{driver: true, rank: "0"}
			continue
		}
		for rank, recs := range rs {
			// by anchor; of equal anchors the later record
			sort.SliceStable(recs, func(i, j int) bool {
				if recs[i].m.MeanX != recs[j].m.MeanX {
					return recs[i].m.MeanX < recs[j].m.MeanX
				}
				return recs[i].t < recs[j].t
			})
			p := &hostPlacer{rank: rank}
			for i, r := range recs {
				if i+1 < len(recs) && recs[i+1].m.MeanX == r.m.MeanX {
					continue
				}
				p.models = append(p.models, r.m)
			}
			out[host] = p
		}
	}
	return out
}

func tagValue(tags []Tag, key string) string {
	for _, t := range tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// placement counts one stream's events placed piecewise.
type placement struct {
	total, placed, noModel, noLocal, outside int
	hosts                                    map[string]*hostPlacer // hosts seen, nil: none for it
}

// readPiecewise reads the events of q (grouped by o.Tag and host), their
// hca_local_ns, and the input's hca_model and hca_sync records, and returns
// the events placed piecewise on the global timeline as series grouped by
// o.Tag (values the global times) with their bounds, and each stream's
// counts.
func readPiecewise(ctx context.Context, in Input, q Query, o MatchOptions, errw io.Writer) (evs, bounds []*Series, per map[string]*placement, err error) {
	fields := map[string][]*Series{}
	for _, f := range modelFieldNames {
		mq := Query{Measurement: "hca_model", Field: f, GroupBy: []string{"host", "rank"}, floats: true}
		ss, err := readOptional(ctx, in, mq, io.Discard)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("hca_model: %w", err)
		}
		fields[f] = ss
	}
	sync, err := readOptional(ctx, in, Query{Measurement: "hca_sync", TimeValue: true, GroupBy: []string{"host"}}, io.Discard)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("hca_sync: %w", err)
	}
	var syncHosts []string
	for _, s := range sync {
		if h := tagValue(s.Tags, "host"); h != "" {
			syncHosts = append(syncHosts, h)
		}
	}
	hosts := placers(fields, syncHosts)

	group := []string{o.Tag}
	if o.Tag != "host" {
		group = append(group, "host")
	}
	// every event, for the count of those without hca_local_ns
	aq := q
	aq.Field, aq.TimeValue, aq.GroupBy = "", true, group
	all, err := read(ctx, in, aq, io.Discard)
	if err != nil {
		return nil, nil, nil, err
	}
	lq := q
	lq.Field, lq.TimeValue, lq.GroupBy = "hca_local_ns", false, group
	local, err := readOptional(ctx, in, lq, errw)
	if err != nil {
		return nil, nil, nil, err
	}
	per = map[string]*placement{}
	stream := func(s *Series) *placement {
		v := tagValue(s.Tags, o.Tag)
		if per[v] == nil {
			per[v] = &placement{hosts: map[string]*hostPlacer{}}
		}
		return per[v]
	}
	for _, s := range all {
		if slices.ContainsFunc(s.Tags, func(t Tag) bool { return t.Key == o.Tag }) {
			p := stream(s)
			p.total += len(s.T)
			p.noLocal += len(s.T) // less those with hca_local_ns, below
		}
	}
	ev, bd := map[string]*Series{}, map[string]*Series{}
	var order []string
	for _, s := range local {
		v := tagValue(s.Tags, o.Tag)
		if !slices.ContainsFunc(s.Tags, func(t Tag) bool { return t.Key == o.Tag }) {
			continue
		}
		p := stream(s)
		p.noLocal -= len(s.T)
		host := tagValue(s.Tags, "host")
		hp := hosts[host]
		p.hosts[host] = hp
		if hp == nil {
			p.noModel += len(s.T)
			continue
		}
		if ev[v] == nil {
			tags := []Tag{{o.Tag, v}}
			ev[v], bd[v] = &Series{Tags: tags}, &Series{Tags: tags}
			order = append(order, v)
		}
		for i, x := range s.X {
			g, b, out := hp.place(x)
			ev[v].T, ev[v].X = append(ev[v].T, s.T[i]), append(ev[v].X, g)
			bd[v].T, bd[v].X = append(bd[v].T, s.T[i]), append(bd[v].X, b)
			p.placed++
			if out {
				p.outside++
			}
		}
	}
	for _, v := range append([]string{o.Ref}, o.Others...) {
		p := per[v]
		if p == nil || p.total == 0 || p.placed > 0 {
			continue // no events at all: MatchSeries says so
		}
		var hs []string
		for h, hp := range p.hosts {
			if hp == nil {
				hs = append(hs, "host="+cmp.Or(h, "(none)"))
			}
		}
		sort.Strings(hs)
		why := ""
		if len(hs) > 0 {
			why = " (" + strings.Join(hs, ", ") + ": no hca_model records, nor hca_sync of rank 0)"
		}
		return nil, nil, nil, fmt.Errorf("match --piecewise: no event with %s=%s could be placed: %d of %d without a model%s, %d without hca_local_ns",
			o.Tag, v, p.noModel, p.total, why, p.noLocal)
	}
	for _, v := range order {
		evs, bounds = append(evs, ev[v]), append(bounds, bd[v])
	}
	return evs, bounds, per, nil
}

// describeHosts lists how a stream's hosts were placed.
func (p *placement) describeHosts() string {
	var parts []string
	for h, hp := range p.hosts {
		parts = append(parts, "host="+cmp.Or(h, "(none)")+": "+hp.describe())
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}
