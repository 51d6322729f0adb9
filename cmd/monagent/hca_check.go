package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/monagent/monagent/hca"
)

// check refuses, as a usage error naming the flag, its value and what
// would do, the first flag of 'hca sim' that cannot be used, before
// anything runs; it returns the --check-after times (ns).
// The largest clusters hca sim runs: 65,536 simulated agents took 12 s and
// 226 MB on a 2-core EPYC; with --transport udp each agent is a process of
// its own on this machine (a fleet's 1,024 boards).
const (
	maxSimNodes = 65536
	maxUDPNodes = 1024
)

func (o *hcaOpts) check(fs *flag.FlagSet) ([]int64, error) {
	var algs []string
	for _, a := range hca.Algorithms() {
		algs = append(algs, a.Name())
	}
	_, badFilter := hca.ParseFitpointFilter(o.filter)
	// The simulation's times stay within its horizon (int64 ns throughout).
	horizon := time.Duration(hca.SimHorizonNS)
	duration := fmt.Sprintf("want a duration from 0 to %v", horizon)
	within := func(d time.Duration) bool { return d >= 0 && d <= horizon }
	for _, c := range []struct {
		flag string
		bad  bool
		want string
	}{
		// One node has nothing to synchronise with and no model to check.
		{"nodes", o.nodes < 2, "want at least 2: rank 0 and an agent to synchronise with it"},
		{"nodes", o.transport != "udp" && o.nodes > maxSimNodes, fmt.Sprintf("want at most %d simulated agents (~3.5 KB each: 65,536 took 12 s and 226 MB)", maxSimNodes)},
		{"nodes", o.transport == "udp" && o.nodes > maxUDPNodes, fmt.Sprintf("want at most %d with --transport udp (one agent process each, on this machine)", maxUDPNodes)},
		{"algorithm", !slices.Contains(algs, o.algorithm), "want one of " + strings.Join(algs, ", ")},
		{"transport", o.transport != "sim" && o.transport != "udp", "want sim or udp"},
		{"drift-ppm", !(o.drift >= 0 && o.drift <= hca.MaxDriftPPM), fmt.Sprintf("want 0 to %d", hca.MaxDriftPPM)},
		{"offset", !within(o.offset), duration},
		{"fitpoints", o.fitpoints < 2, "want at least 2: a line needs two points"},
		{"exchanges", o.exchanges < 1, "want at least 1"},
		{"pingpongs", o.pingpongs < 1, "want at least 1"},
		{"filter", badFilter != nil, "want " + hca.MedianSample.String() + " or " + hca.MinRTTSample.String()},
		{"spacing", !within(o.spacing), duration},
		{"latency", !within(o.latency), duration},
		{"jitter", !within(o.jitter), duration},
		{"asymmetry", !within(o.asym) && !within(-o.asym), fmt.Sprintf("want a duration within ±%v", horizon)},
		{"loss", !(o.loss >= 0 && o.loss < 1), "want a probability, 0 ≤ P < 1"},
		{"answer-delay", o.answerDelay < 0, "want a duration ≥ 0"},
	} {
		if c.bad {
			f := fs.Lookup(c.flag)
			v := f.Value.String()
			if _, isString := f.Value.(flag.Getter).Get().(string); isString {
				v = fmt.Sprintf("%q", v)
			}
			return nil, usageError(fmt.Sprintf("hca sim: --%s %s: %s", c.flag, v, c.want))
		}
	}
	var after []int64
	for _, s := range strings.Split(o.checks, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil || !within(d) {
			return nil, usageError(fmt.Sprintf("hca sim: --check-after %q: want durations from 0 to %v, comma-separated, such as 0s,10s,20s", s, horizon))
		}
		after = append(after, int64(d))
	}
	var other string // a flag set that the chosen transport has no use for
	fs.Visit(func(f *flag.Flag) {
		switch {
		case o.transport == "udp" && slices.Contains([]string{"latency", "jitter", "asymmetry", "loss"}, f.Name):
			other = "hca sim: --" + f.Name + " describes the simulated network; loopback UDP has its own"
		case o.transport == "sim" && f.Name == "answer-delay" && o.answerDelay != 0:
			other = "hca sim: --answer-delay is for --transport udp; the simulated network has --latency"
		}
	})
	if other != "" {
		return nil, usageError(other)
	}
	return after, nil
}
