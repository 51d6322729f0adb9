package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
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
	after, err := o.check(fs)
	if err != nil {
		return err
	}
	p := hca.DefaultParams()
	p.Fitpoints, p.Exchanges, p.SpacingNS = o.fitpoints, o.exchanges, int64(o.spacing)
	p.MaxPingPongs, p.MinPingPongs = o.pingpongs, min(p.MinPingPongs, o.pingpongs)
	p.Filter, _ = hca.ParseFitpointFilter(o.filter) // checked
	p.KeepGoing = true                              // a rank that fails is reported, not the end of the run
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep hca.Report
	if o.transport == "udp" {
		rep, err = hcaUDP(ctx, o, p, after)
	} else {
		rep, err = hca.SimExperiment{Algorithm: o.algorithm, Params: p, CheckAfter: after, Network: hca.SimConfig{
			Nodes: o.nodes, Seed: o.seed, DriftPPM: o.drift, OffsetNS: int64(o.offset), LatencyNS: int64(o.latency),
			JitterNS: int64(o.jitter), AsymmetryNS: int64(o.asym), Loss: o.loss}}.Run(ctx)
	}
	if err != nil {
		return err
	}
	return writeHCAReport(os.Stdout, rep, o.json)
}
