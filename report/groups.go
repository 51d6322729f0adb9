package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// An InfluxDB answer of a fleet (100 boards × 1 day at 1 Hz: 8.64 M points)
// held whole is 8.64 M × (time, value, tag set) = 173 MB before the slack of
// growing slices and the garbage collector's headroom double it (360 MiB
// RSS). Read the groups (a group is one series of the report: a value of
// the --group-by tags) a batch at a time instead, their statistics computed
// before the next batch is read: the report holds a batch's points (at most
// batchPoints, or one group larger than that), not the fleet's.

// influxGroup is one group of the records InfluxDB holds: the values of the
// group-by tags ("" where a record lacks the tag) and how many records.
type influxGroup struct {
	tags []Tag
	n    int64
}

func (g influxGroup) key() string { return string(appendKey(nil, g.tags)) }

// byGroup reports whether Run reads a batch of groups at a time: every input an
// InfluxDB and nothing that needs all the series at the end (an HTML page,
// a correlation, which reads the input again).
func byGroup(in Input, q Query, o RunOptions) bool {
	if len(in.Paths) == 0 || q.Field == "" || q.TimeValue || o.Correlate != nil || o.HTMLDir != "" {
		return false
	}
	for _, p := range in.Paths {
		if !strings.HasPrefix(p, "http://") && !strings.HasPrefix(p, "https://") {
			return false
		}
	}
	return true
}

// influxGroupsQL is the statement listing q's groups: a count of the field
// per value of the group-by tags (no GroupBy: per tag set).
func influxGroupsQL(q Query) string {
	group := "*"
	if q.GroupBy != nil {
		keys := make([]string, len(q.GroupBy))
		for i, k := range q.GroupBy {
			keys[i] = quoteIdent(k)
		}
		group = strings.Join(keys, ",")
	}
	return fmt.Sprintf("SELECT count(%s) FROM %s%s GROUP BY %s", quoteIdent(q.Field), quoteIdent(q.Measurement), influxWhere(q, ""), group)
}

// influxGroups asks each input for the groups of q's records, merged, in
// the order of their keys.
func influxGroups(ctx context.Context, in Input, q Query) ([]influxGroup, error) {
	at := map[string]int{}
	var groups []influxGroup
	for _, p := range in.Paths {
		inf := in.Influx
		inf.URL = p
		err := influxQuery(ctx, inf, influxGroupsQL(q), func(r *influxResponse) error {
			if r.Error != "" {
				return fmt.Errorf("influxdb %s: %s", p, r.Error)
			}
			for _, res := range r.Results {
				if res.Error != "" {
					return fmt.Errorf("influxdb %s: %s", p, res.Error)
				}
				for _, s := range res.Series {
					g := influxGroup{}
					for k, v := range s.Tags {
						g.tags = append(g.tags, Tag{k, v})
					}
					sort.Slice(g.tags, func(i, j int) bool { return g.tags[i].Key < g.tags[j].Key })
					for _, row := range s.Values {
						if len(row) == 2 {
							if n, ok := row[1].(json.Number); ok {
								c, _ := n.Int64()
								g.n += c
							}
						}
					}
					if i, ok := at[g.key()]; ok {
						groups[i].n += g.n
						continue
					}
					at[g.key()] = len(groups)
					groups = append(groups, g)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].key() < groups[j].key() })
	return groups, nil
}

// Batches of groups: a query per group costs milliseconds of influxd's
// time, so small groups are asked for together, up to batchPoints records
// (about 5 MiB held) and batchCond bytes of conditions (the statement goes
// in the URL); a group larger than batchPoints is a batch of its own.
var (
	batchPoints int64 = 1 << 18
	batchCond         = 32 << 10
)

// batch is consecutive groups read with one query.
type batch struct {
	groups []influxGroup
	n      int64
	cond   string // InfluxQL: (g1) OR (g2) ...
}

// batches packs the groups, in order, into batches.
func batches(groups []influxGroup) []batch {
	var out []batch
	for _, g := range groups {
		conds := make([]string, len(g.tags))
		for i, t := range g.tags {
			conds[i] = tagCond(t)
		}
		c := "(" + strings.Join(conds, " AND ") + ")"
		if len(g.tags) == 0 {
			c = ""
		}
		if k := len(out) - 1; k >= 0 && out[k].cond != "" && c != "" && out[k].n+g.n <= batchPoints && len(out[k].cond)+len(c) <= batchCond {
			b := &out[k]
			b.groups, b.n, b.cond = append(b.groups, g), b.n+g.n, b.cond+" OR "+c
			continue
		}
		out = append(out, batch{groups: []influxGroup{g}, n: g.n, cond: c})
	}
	for i := range out {
		if len(out[i].groups) > 1 {
			out[i].cond = "(" + out[i].cond + ")"
		}
	}
	return out
}

// runByGroup is Run over InfluxDB inputs a batch of groups at a time: each
// batch's records are read from every input (merged, as read merges them),
// its series computed and plotted and then let go; the report is written
// once all are done, as Run writes it.
func runByGroup(ctx context.Context, in Input, q Query, o RunOptions, out, errw io.Writer) error {
	began := time.Now()
	groups, err := influxGroups(ctx, in, q)
	if err != nil {
		return err
	}
	source := strings.Join(in.Paths, ", ")
	bs := batches(groups)
	var (
		rs    []*Result
		prev  *Collector
		plots int
	)
	for _, b := range bs {
		c, err := NewCollector(q)
		if err != nil {
			return err
		}
		c.Progress, c.sizes = errw, map[string]int64{}
		for _, g := range b.groups {
			var set []Tag // the series' key: the tags a record has
			for _, t := range g.tags {
				if t.Value != "" {
					set = append(set, t)
				}
			}
			c.sizes[string(appendKey(nil, set))] = g.n
		}
		if prev != nil {
			c.Counts, c.start, c.last = prev.Counts, prev.start, prev.last // one count and one progress for the run
		}
		prev = c
		for _, p := range in.Paths {
			inf := in.Influx
			inf.URL = p
			c.Source = p
			if err := c.readInflux(ctx, inf, b.cond); err != nil {
				return err
			}
		}
		series, err := c.Finish()
		if errors.Is(err, ErrNoData) {
			continue // groups of records set aside; counted
		} else if err != nil {
			return fmt.Errorf("%s: %w", source, err)
		}
		for _, s := range series {
			r, err := Compute(s, o.Options)
			if err != nil {
				return err
			}
			rs = append(rs, r)
			if o.PlotDir != "" {
				files, err := WritePlots(o.PlotDir, q.Measurement+"_"+q.Field, s, r)
				if err != nil {
					return fmt.Errorf("plots: %w", err)
				}
				plots += len(files)
			}
		}
	}
	if prev == nil {
		c, err := NewCollector(q)
		if err != nil {
			return err
		}
		prev = c
	}
	if len(rs) == 0 {
		return fmt.Errorf("%s: %w: %s", source, ErrNoData, prev.describe())
	}
	if d := time.Since(began); d > time.Second {
		fmt.Fprintf(errw, "read %d records from %s in %s: %d groups in %d queries\n", prev.Counts.Records, source, d.Round(time.Millisecond), len(groups), len(bs))
	}
	if s := prev.Counts.Skipped(); s != "" {
		fmt.Fprintf(errw, "report: skipped %s\n", s)
	}
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Name() < rs[j].Name() })
	dir := o.PlotDir
	o.PlotDir = "" // written above
	if err := output(q.Measurement+"_"+q.Field, nil, rs, o, out, errw); err != nil {
		return err
	}
	if dir != "" {
		fmt.Fprintf(errw, "wrote %d plot files (PNG and SVG) into %s\n", plots, dir)
	}
	return nil
}
