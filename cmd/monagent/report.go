package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/report"
)

type reportOpts struct {
	config, measurement, field, format, plots, bounds, bucket, token, start, stop string
	tau0                                                                          time.Duration
	where, groupBy                                                                listFlag
	inputs                                                                        inputFlag

	correlate, html string
	freqWindow      time.Duration

	match, timeField string
	window, deltaISR time.Duration
	traffic          bool
	windowSet        bool
	piecewise        bool
}

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, strings.Split(v, ",")...)
	return nil
}

// inputFlag is the repeatable --input; a path may hold commas.
type inputFlag []string

func (l *inputFlag) String() string { return strings.Join(*l, " ") }
func (l *inputFlag) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func reportFlags() (*flag.FlagSet, *reportOpts) {
	o := &reportOpts{}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.Var(&o.inputs, "input", "`SOURCE`: a spool directory, a line-protocol file ('-': stdin) or an InfluxDB 1.8 URL http(s)://host:port; repeatable: the inputs are merged, e.g. two boards' spools (none: spool.dir of --config, else ./data/spool)")
	fs.StringVar(&o.config, "config", "", "read the spool of this configuration `FILE` (its spool.dir)")
	fs.StringVar(&o.measurement, "measurement", "", "measurement `M`, required (e.g. clock_offset)")
	fs.StringVar(&o.field, "field", "", "offset field `F` in ns, required (e.g. offset_ns)")
	fs.Var(&o.where, "where", "keep records with `tag=value` (repeatable)")
	fs.Var(&o.groupBy, "group-by", "one series per value of these `TAGS` (repeatable or comma list; none: per whole tag set)")
	fs.StringVar(&o.format, "format", "text", "output `FORMAT`: text, markdown or json")
	fs.StringVar(&o.plots, "plots", "", "write PNG and SVG plots per series into `DIR`")
	fs.StringVar(&o.bounds, "bounds", "100ns,1us,10us,100us,1ms", "`DURATIONS` for the shares of |offset| within each (comma-separated)")
	fs.DurationVar(&o.tau0, "tau0", 0, "sampling interval for ADEV/MDEV/TDEV/MTIE (0: the median interval)")
	fs.StringVar(&o.bucket, "bucket", "", "InfluxDB `db/rp` (InfluxDB input)")
	fs.StringVar(&o.token, "token", "", "InfluxDB `user:pass` (empty: $MONAGENT_INFLUX_TOKEN)")
	fs.StringVar(&o.start, "start", "", "only records at or after `TIME`: RFC 3339 or a duration before now, e.g. -1h (empty: no bound; InfluxDB: -1h)")
	fs.StringVar(&o.stop, "stop", "", "only records at or before `TIME`: RFC 3339 or a duration before now (empty: now)")
	fs.StringVar(&o.match, "match", "", "`TAG=REF,OTHER`[,...]: pair the --measurement events of these boards; offsets TS_OTHER − (TS_REF + Δ_ISR) get the statistics above (no --field)")
	fs.StringVar(&o.timeField, "time-field", "", "--match: each event's time is this `FIELD`, e.g. global_ns (the HCA timeline; its _bound_ns is reported) (empty: the record's time)")
	fs.DurationVar(&o.window, "window", 0, "--match: pair events at most `DURATION` apart (0: 0.4 × the reference's median event interval)")
	fs.DurationVar(&o.deltaISR, "delta-isr", 0, "--match: Δ_ISR `DURATION`, the other board's interrupt latency minus the reference's (from a calibration capture)")
	fs.BoolVar(&o.piecewise, "piecewise", false, "--match --time-field global_ns: place each event's hca_local_ns between its host's hca_model records before and after it (hca.Interpolate) instead of the recorded global_ns; a host with hca_sync records is rank 0, the global timeline")
	fs.StringVar(&o.correlate, "correlate", "", "fit each series' frequency offset (ppb, from its offsets per --freq-window) against one sensor series `M.F[,tag=value...]`, e.g. sensor.value,kind=temperature: the coefficient (ppb/°C) with its 95 % interval, and its plots")
	fs.DurationVar(&o.freqWindow, "freq-window", 0, "--correlate: fit each frequency over `DURATION` windows (0: 64 sampling intervals, at most 1/8 of the series)")
	fs.StringVar(&o.html, "html", "", "write `DIR`/index.html: the table, notes, every plot (PNG and SVG beside it) and the correlation, a page that works offline")
	fs.BoolVar(&o.traffic, "traffic", false, "NTP and PTP probes' bytes/s per client and the clients one server or master port serves at 10 % of 100 Mb/s and 1 Gb/s, next to the study's (no --measurement/--field)")
	return fs, o
}

func reportCmd(args []string) error {
	fs, o := reportFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fs.Visit(func(f *flag.Flag) { o.windowSet = o.windowSet || f.Name == "window" })
	q, ro, err := o.query(time.Now())
	if err != nil {
		return err
	}
	run := report.RunOptions{Options: ro, Format: o.format, PlotDir: o.plots, Traffic: o.traffic, HTMLDir: o.html}
	if o.correlate != "" {
		c, _ := report.ParseCorrelate(o.correlate) // checked by query
		c.Window = int64(o.freqWindow)
		run.Correlate = &c
	}
	if o.match != "" {
		m, _ := report.ParseMatch(o.match) // checked by query
		m.TimeField, m.Window, m.DeltaISR, m.Piecewise = o.timeField, int64(o.window), int64(o.deltaISR), o.piecewise
		run.Match = &m
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	in := report.Input{Paths: o.inputs, Influx: report.Influx{Bucket: o.bucket, Token: o.token}}
	if in.Influx.Token == "" {
		in.Influx.Token = os.Getenv("MONAGENT_INFLUX_TOKEN")
	}
	if len(o.inputs) == 0 {
		in.Paths = []string{"./data/spool"}
		if o.config != "" {
			cfg, err := agent.Load(o.config)
			if err != nil {
				return err
			}
			in.Paths = []string{cfg.Spool.Dir}
		}
	}
	return report.Run(ctx, in, q, run, os.Stdout, os.Stderr)
}

// query checks the flags and turns them into a report query.
func (o *reportOpts) query(now time.Time) (report.Query, report.Options, error) {
	q := report.Query{Measurement: o.measurement, Field: o.field, GroupBy: o.groupBy}
	ro := report.Options{Tau0: int64(o.tau0)}
	influx, startDefault := false, ""
	for _, in := range o.inputs {
		influx = influx || strings.HasPrefix(in, "http://") || strings.HasPrefix(in, "https://")
	}
	if influx && o.start == "" {
		o.start, startDefault = "-1h", " (the default with an InfluxDB --input)"
	}
	var err error
	if q.Where, err = report.ParseTags(o.where); err == nil {
		if q.Start, err = report.ParseTime(o.start, now); err == nil {
			if q.Stop, err = report.ParseTime(o.stop, now); err == nil {
				ro.Bounds, err = report.ParseBounds(o.bounds)
			}
		}
	}
	if err == nil && o.match != "" {
		_, err = report.ParseMatch(o.match)
	}
	if err == nil && o.correlate != "" {
		_, err = report.ParseCorrelate(o.correlate)
	}
	switch {
	case err != nil:
	case q.Start != 0 && q.Stop != 0 && q.Start > q.Stop:
		err = fmt.Errorf("--start %s%s is after --stop %s: want start <= stop", o.start, startDefault, o.stop)
	case repeated(o.inputs) != "":
		err = fmt.Errorf("--input %s is given twice", repeated(o.inputs))
	case o.traffic && o.match != "":
		err = errors.New("--traffic and --match are separate reports: give one")
	case o.traffic && (o.plots != "" || o.html != ""):
		err = errors.New("--traffic has no plots or HTML page")
	case o.correlate != "" && (o.traffic || o.match != ""):
		err = errors.New("--correlate pairs a clock's offsets (--measurement, --field) with a sensor: not with --traffic or --match")
	case o.correlate == "" && o.freqWindow != 0:
		err = errors.New("--freq-window needs --correlate")
	case o.freqWindow < 0:
		err = errors.New("--freq-window must not be negative")
	case o.match != "" && o.measurement == "":
		err = errors.New("--match needs --measurement (e.g. gpio_event, pps_event)")
	case o.match != "" && o.field != "":
		err = errors.New("--match takes the event time from the record or --time-field, not --field")
	case o.piecewise && (o.match == "" || o.timeField != "global_ns"):
		err = errors.New("--piecewise needs --match and --time-field global_ns (it places the events on the HCA global timeline)")
	case o.match == "" && (o.timeField != "" || o.windowSet || o.deltaISR != 0):
		err = errors.New("--time-field, --window and --delta-isr need --match")
	case o.match != "" && o.windowSet && o.window <= 0:
		err = fmt.Errorf("--window %s: must be positive (leave it out for 0.4 × the median event interval)", o.window)
	case o.traffic && (o.measurement != "" || o.field != ""):
		err = errors.New("--traffic reads ntp_probe and ptp_probe_stats: no --measurement or --field")
	case !o.traffic && o.match == "" && (o.measurement == "" || o.field == ""):
		err = errors.New("--measurement and --field are required")
	case o.format != "text" && o.format != "markdown" && o.format != "json":
		err = fmt.Errorf("--format %q: want text, markdown or json", o.format)
	case o.bucket != "" && !influx:
		err = errors.New("--bucket needs an InfluxDB --input http(s)://...")
	case influx && o.bucket == "":
		err = errors.New("an InfluxDB --input needs --bucket db/rp (InfluxDB 1.8: database/retention policy)")
	case notDir(o.plots) != "":
		err = fmt.Errorf("--plots %s: %s, want a directory (made if missing)", o.plots, notDir(o.plots))
	case notDir(o.html) != "":
		err = fmt.Errorf("--html %s: %s, want a directory (made if missing)", o.html, notDir(o.html))
	case o.tau0 < 0:
		err = errors.New("--tau0 must not be negative")
	}
	if err != nil {
		return q, ro, usageError("report: " + err.Error() + " (see 'monagent report --help')")
	}
	return q, ro, nil
}

// repeated returns the first value of l given twice, "" when none is.
func repeated(l []string) string {
	for i, v := range l {
		if slices.Contains(l[:i], v) {
			return v
		}
	}
	return ""
}

// notDir says why path cannot be an output directory ("" when it is one or
// does not exist yet): found before the report reads its inputs, not after.
func notDir(path string) string {
	if path == "" {
		return ""
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return ""
	case err != nil:
		return err.Error()
	case !fi.IsDir():
		return "is a file"
	}
	return ""
}
