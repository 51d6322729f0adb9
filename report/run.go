package report

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Input is where Run reads: Paths, read in order and merged into one set of
// series (two boards' spools, say). Each is a spool directory, a
// line-protocol file, "-" for standard input, or an http(s) URL of an
// InfluxDB queried with Influx's Bucket and Token (its URL is the path's).
// Of a point in several inputs the last read is kept (see Collector.Finish).
type Input struct {
	Paths  []string
	Influx Influx

	stdin []byte // standard input, read once for a mode reading it twice
}

// RunOptions configure Run.
type RunOptions struct {
	Options
	Format  string // text, markdown or json
	PlotDir string // "" for no plots
	// Match, when set, pairs the events of two or more boards (RunMatch).
	Match *MatchOptions
	// Traffic reports the NTP and PTP probes' bytes per client (RunTraffic).
	Traffic bool
	// Correlate, when set, fits each series' frequency against a sensor
	// series (correlate.go).
	Correlate *CorrelateOptions
	// HTMLDir, when set, receives index.html and its plots (html.go).
	HTMLDir string
}

// Run reads the input, computes every series and writes the report to out;
// progress, what was skipped and the plot files go to errw. With o.Match it
// pairs events instead (RunMatch), with o.Traffic it reports the probes'
// traffic (RunTraffic).
func Run(ctx context.Context, in Input, q Query, o RunOptions, out, errw io.Writer) error {
	if o.Match != nil {
		return RunMatch(ctx, in, q, *o.Match, o, out, errw)
	}
	if o.Traffic {
		return RunTraffic(ctx, in, q, o.Format, out, errw)
	}
	if byGroup(in, q, o) {
		return runByGroup(ctx, in, q, o, out, errw)
	}
	if o.Correlate != nil {
		if err := in.rereadable(); err != nil {
			return err
		}
	}
	series, err := read(ctx, in, q, errw)
	if err != nil {
		return err
	}
	rs := make([]*Result, len(series))
	for i, s := range series {
		if rs[i], err = Compute(s, o.Options); err != nil {
			return err
		}
	}
	if o.Correlate != nil {
		if err := correlate(ctx, in, q, *o.Correlate, series, rs, errw); err != nil {
			return err
		}
	}
	return output(q.Measurement+"_"+q.Field, series, rs, o, out, errw)
}

// read reads the input's records selected by q into series, reporting
// progress and what was skipped on errw.
func read(ctx context.Context, in Input, q Query, errw io.Writer) ([]*Series, error) {
	c, err := NewCollector(q)
	if err != nil {
		return nil, err
	}
	if len(in.Paths) == 0 {
		return nil, errors.New("input: none given")
	}
	c.Progress = errw
	began := time.Now()
	var names []string
	for _, p := range in.Paths {
		err := c.readInput(ctx, in, p)
		names = append(names, c.Source)
		if errors.Is(err, ErrNoData) && len(in.Paths) > 1 {
			fmt.Fprintf(errw, "report: %v\n", err) // a spool without segments: the others may have records
			continue
		}
		if err != nil {
			return nil, err
		}
	}
	source := strings.Join(names, ", ")
	series, err := c.Finish()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	if d := time.Since(began); d > time.Second {
		fmt.Fprintf(errw, "read %d records from %s in %s\n", c.Counts.Records, source, d.Round(time.Millisecond))
	}
	if s := c.Counts.Skipped(); s != "" {
		fmt.Fprintf(errw, "report: skipped %s\n", s)
	}
	if m := c.FirstMalformed(); m != "" {
		fmt.Fprintf(errw, "report: first malformed line: %s\n", m)
	}
	return series, nil
}

// readOptional is read for records an input may lack: none is no error.
func readOptional(ctx context.Context, in Input, q Query, errw io.Writer) ([]*Series, error) {
	ss, err := read(ctx, in, q, errw)
	if errors.Is(err, ErrNoData) {
		return nil, nil
	}
	return ss, err
}

// readInput adds the selected records of one of in.Paths, p.
func (c *Collector) readInput(ctx context.Context, in Input, p string) error {
	c.Source = p
	switch fi, err := os.Stat(p); {
	case strings.HasPrefix(p, "http://") || strings.HasPrefix(p, "https://"):
		inf := in.Influx
		inf.URL = p
		return c.ReadInflux(ctx, inf)
	case p == "-":
		c.Source = "standard input"
		if in.stdin != nil {
			return c.ReadLineProtocol(bytes.NewReader(in.stdin))
		}
		return c.ReadLineProtocol(os.Stdin)
	case err != nil:
		return fmt.Errorf("input: %w", err)
	case fi.IsDir():
		return c.ReadSpool(p)
	default:
		return c.ReadFile(p)
	}
}

// rereadable makes standard input readable more than once (read into memory).
func (in *Input) rereadable() error {
	if !slices.Contains(in.Paths, "-") || in.stdin != nil {
		return nil
	}
	b, err := io.ReadAll(os.Stdin)
	if err != nil {
		return fmt.Errorf("standard input: %w", err)
	}
	in.stdin = b
	return nil
}

// output writes the results in o.Format, and the plots.
func output(prefix string, series []*Series, rs []*Result, o RunOptions, out, errw io.Writer) error {
	var err error
	switch o.Format {
	case "json":
		err = WriteJSON(out, rs)
	case "markdown":
		err = WriteMarkdown(out, rs)
	default:
		err = WriteText(out, rs)
	}
	if err == nil && o.Format != "json" {
		bullet := ""
		if o.Format == "markdown" {
			bullet = "- "
		}
		err = writeCorrelations(out, rs, bullet)
	}
	if err == nil && o.HTMLDir != "" {
		err = WriteHTML(o.HTMLDir, prefix, series, rs, errw)
	}
	if err != nil || o.PlotDir == "" {
		return err
	}
	n := 0
	for i, s := range series {
		files, err := WritePlots(o.PlotDir, prefix, s, rs[i])
		if err != nil {
			return fmt.Errorf("plots: %w", err)
		}
		n += len(files)
	}
	fmt.Fprintf(errw, "wrote %d plot files (PNG and SVG) into %s\n", n, o.PlotDir)
	return nil
}

// Skipped lists the records set aside, "" when none.
func (n Counts) Skipped() string {
	var parts []string
	for _, e := range []struct {
		n    int64
		what string
	}{{n.MissingField, "without the field"}, {n.NonNumeric, "with a non-numeric value"}, {n.NonFinite, "with a NaN or infinite value"},
		{n.Duplicates, "of points written again (the last kept, as InfluxDB keeps it)"},
		{n.SameTime, "at the time of another tag set's record in a series (the first tag set kept)"}, {n.OutOfRange, "outside the time range"}, {n.NoTime, "without a timestamp"},
		{n.Malformed, "malformed (line protocol has no NaN or Inf)"}} {
		if e.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s %s", e.n, plural(e.n, "record", "records"), e.what))
		}
	}
	return strings.Join(parts, ", ")
}

// ParseTags parses "tag=value" arguments (--where).
func ParseTags(args []string) ([]Tag, error) {
	var out []Tag
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--where %q: want tag=value", a)
		}
		out = append(out, Tag{k, v})
	}
	return out, nil
}

// ParseTime parses an RFC 3339 time or a duration relative to now ("-1h",
// "-30m"; a positive duration also counts back) into ns; "" is 0 (unbounded).
func ParseTime(s string, now time.Time) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UnixNano(), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("--start/--stop %q is neither an RFC 3339 time nor a duration such as -1h", s)
	}
	if d > 0 {
		d = -d
	}
	return now.Add(d).UnixNano(), nil
}

// ParseBounds parses comma-separated durations ("100ns,1us") into ns.
func ParseBounds(s string) ([]int64, error) {
	if s == "" {
		return []int64{}, nil
	}
	var out []int64
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--bounds: %w", err)
		}
		if d < 0 {
			return nil, errors.New("--bounds: a bound must not be negative")
		}
		out = append(out, int64(d))
	}
	return out, nil
}
