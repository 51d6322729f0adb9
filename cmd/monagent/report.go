package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/report"
)

type reportOpts struct {
	input, config, measurement, field, format, plots, bounds, bucket, token, start, stop string
	tau0                                                                                 time.Duration
	where, groupBy                                                                       listFlag
}

// listFlag is a repeatable flag whose values may also be comma lists.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	*l = append(*l, strings.Split(v, ",")...)
	return nil
}

func reportFlags() (*flag.FlagSet, *reportOpts) {
	o := &reportOpts{}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.StringVar(&o.input, "input", "", "`SOURCE`: a spool directory, a line-protocol file ('-': stdin) or an InfluxDB 1.8 URL http(s)://host:port (empty: spool.dir of --config, else ./data/spool)")
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
	return fs, o
}

func reportCmd(args []string) error {
	fs, o := reportFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	q, ro, err := o.query(time.Now())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	in := report.Input{Path: o.input, Influx: report.Influx{URL: o.input, Bucket: o.bucket, Token: o.token}}
	if in.Influx.Token == "" {
		in.Influx.Token = os.Getenv("MONAGENT_INFLUX_TOKEN")
	}
	if o.input == "" {
		in.Path = "./data/spool"
		if o.config != "" {
			cfg, err := agent.Load(o.config)
			if err != nil {
				return err
			}
			in.Path = cfg.Spool.Dir
		}
	}
	return report.Run(ctx, in, q, report.RunOptions{Options: ro, Format: o.format, PlotDir: o.plots}, os.Stdout, os.Stderr)
}

// query checks the flags and turns them into a report query.
func (o *reportOpts) query(now time.Time) (report.Query, report.Options, error) {
	q := report.Query{Measurement: o.measurement, Field: o.field, GroupBy: o.groupBy}
	ro := report.Options{Tau0: int64(o.tau0)}
	influx := strings.HasPrefix(o.input, "http://") || strings.HasPrefix(o.input, "https://")
	if influx {
		o.start = cmp.Or(o.start, "-1h")
	}
	var err error
	if q.Where, err = report.ParseTags(o.where); err == nil {
		if q.Start, err = report.ParseTime(o.start, now); err == nil {
			if q.Stop, err = report.ParseTime(o.stop, now); err == nil {
				ro.Bounds, err = report.ParseBounds(o.bounds)
			}
		}
	}
	switch {
	case o.measurement == "" || o.field == "":
		err = errors.New("--measurement and --field are required")
	case o.format != "text" && o.format != "markdown" && o.format != "json":
		err = fmt.Errorf("--format %q: want text, markdown or json", o.format)
	case o.bucket != "" && !influx:
		err = errors.New("--bucket needs an InfluxDB --input http(s)://...")
	case o.tau0 < 0:
		err = errors.New("--tau0 must not be negative")
	}
	if err != nil {
		return q, ro, usageError("report: " + err.Error() + " (see 'monagent report --help')")
	}
	return q, ro, nil
}
