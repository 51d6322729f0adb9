package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/monagent/monagent/hca"
)

const hcaUsage = "hca: want 'hca sim [flags]' (see 'monagent hca --help')"

// hcaOpts are the flags of 'monagent hca sim'.
type hcaOpts struct {
	nodes                                int
	algorithm, transport, checks, filter string
	drift                                float64
	offset, latency, jitter, asym        time.Duration
	spacing, answerDelay                 time.Duration
	seed                                 uint64
	fitpoints, exchanges, pingpongs      int
	loss                                 float64
	json                                 bool
}

func hcaFlags() (*flag.FlagSet, *hcaOpts) {
	var o hcaOpts
	d := hca.DefaultParams()
	fs := flag.NewFlagSet("hca", flag.ContinueOnError)
	fs.IntVar(&o.nodes, "nodes", 16, "number of agents `N` (rank 0 is the root)")
	fs.StringVar(&o.algorithm, "algorithm", "hca", "`NAME`: skampi, tree, jk, hca, hca2 or hca3")
	fs.StringVar(&o.transport, "transport", "sim", "sim (simulated network, simulated time) or udp (one process per agent over loopback UDP, real time)")
	fs.Float64Var(&o.drift, "drift-ppm", 100, "clock drifts drawn uniformly within ±`PPM`")
	fs.DurationVar(&o.offset, "offset", time.Second, "clock offsets drawn uniformly within ±this")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the clocks and the simulated network")
	fs.StringVar(&o.checks, "check-after", "0s,10s,20s", "check the models at these `DURATIONS` after the sync (comma-separated)")
	fs.IntVar(&o.fitpoints, "fitpoints", d.Fitpoints, "fitpoints per fitted line")
	fs.IntVar(&o.exchanges, "exchanges", d.Exchanges, "ping-pongs per fitpoint")
	fs.IntVar(&o.pingpongs, "pingpongs", d.MaxPingPongs, "at most this many ping-pongs per SKaMPI offset measurement (HCA's and HCA2's intercepts, the offset-only methods); more narrow its interval")
	fs.StringVar(&o.filter, "filter", d.Filter.String(), "how a fitpoint is taken from its ping-pongs: median (Jones & Koenig) or min-rtt (the shortest round trip, at its midpoint)")
	fs.DurationVar(&o.spacing, "spacing", time.Duration(d.SpacingNS), "least time between a pair's successive fitpoints")
	fs.DurationVar(&o.latency, "latency", 5*time.Microsecond, "sim: one-way latency of every message")
	fs.DurationVar(&o.jitter, "jitter", time.Microsecond, "sim: mean of the exponential jitter added to each message (0: noiseless)")
	fs.DurationVar(&o.asym, "asymmetry", 0, "sim: extra one-way delay from lower to higher ranks")
	fs.Float64Var(&o.loss, "loss", 0, "sim: probability that an exchange is lost")
	fs.DurationVar(&o.answerDelay, "answer-delay", 0, "udp: every ping-pong waits this long more, half before the ping and half before its answer, like a slower link (on loopback a ping-pong costs mostly CPU, so concurrent pairs cannot overlap on fewer cores than agents)")
	fs.BoolVar(&o.json, "json", false, "print one JSON object for scripts (times in ns)")
	return fs, &o
}

// hcaCmd handles 'monagent hca sim' and the helper 'monagent hca node'.
func hcaCmd(args []string) error {
	fs, o := hcaFlags()
	if len(args) > 0 && args[0] == "node" {
		return hcaNode(args[1:])
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usageError(hcaUsage)
	}
	if args[0] != "sim" {
		return usageError(fmt.Sprintf("%s, not %q", hcaUsage, args[0]))
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	var after []int64
	for _, s := range strings.Split(o.checks, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || d < 0 {
			return usageError(fmt.Sprintf("hca: --check-after %q: want durations ≥ 0 such as 0s,10s,20s", s))
		}
		after = append(after, int64(d))
	}
	p := hca.DefaultParams()
	p.Fitpoints, p.Exchanges, p.SpacingNS = o.fitpoints, o.exchanges, int64(o.spacing)
	if o.pingpongs < 1 {
		return usageError(fmt.Sprintf("hca: --pingpongs %d: want at least 1", o.pingpongs))
	}
	p.MaxPingPongs = o.pingpongs
	if p.MinPingPongs > p.MaxPingPongs {
		p.MinPingPongs = p.MaxPingPongs
	}
	var err error
	if p.Filter, err = hca.ParseFitpointFilter(o.filter); err != nil {
		return usageError("hca: --filter: " + err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep hca.Report
	switch o.transport {
	case "sim":
		if o.answerDelay != 0 {
			return usageError("hca: --answer-delay is for --transport udp; the simulated network has --latency")
		}
		rep, err = hca.SimExperiment{Algorithm: o.algorithm, Params: p, CheckAfter: after, Network: hca.SimConfig{
			Nodes: o.nodes, Seed: o.seed, DriftPPM: o.drift, OffsetNS: int64(o.offset), LatencyNS: int64(o.latency),
			JitterNS: int64(o.jitter), AsymmetryNS: int64(o.asym), Loss: o.loss}}.Run(ctx)
	case "udp":
		simOnly := ""
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "latency" || f.Name == "jitter" || f.Name == "asymmetry" || f.Name == "loss" {
				simOnly = f.Name
			}
		})
		if simOnly != "" {
			return usageError("hca: --" + simOnly + " describes the simulated network; loopback UDP has its own")
		}
		if o.answerDelay < 0 {
			return usageError("hca: --answer-delay must not be negative")
		}
		rep, err = hcaUDP(ctx, o, p, after)
	default:
		return usageError(fmt.Sprintf("hca: --transport %q: want sim or udp", o.transport))
	}
	if err != nil {
		return err
	}
	return writeHCAReport(os.Stdout, rep, o.json)
}

func writeHCAReport(w io.Writer, rep hca.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "%s, %d nodes over %s (seed %d, ±%g ppm): sync took %v, %d messages, %d exchanges (%d lost), %d fits rejected\n",
		rep.Algorithm, rep.Nodes, rep.Transport, rep.Seed, rep.DriftPPM, time.Duration(rep.SyncDurationNS),
		rep.Messages, rep.Exchanges, rep.Lost, rep.Rejected)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "after sync\tmax |error| ns\tmedian |error| ns\tmax bound ns\tbound covers\t")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%.1f %%\t\n", time.Duration(c.AfterNS), c.MaxAbsErrorNS, c.MedianAbsErrorNS, c.MaxBoundNS, 100*c.BoundCoverage)
	}
	return tw.Flush()
}
