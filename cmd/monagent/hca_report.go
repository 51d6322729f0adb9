package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/monagent/monagent/hca"
)

// hcaFailuresShown is how many ranks that were not synchronised the text
// report names; --json lists them all.
const hcaFailuresShown = 10

// writeHCAReport prints what 'hca sim' measured: one JSON object, or a
// line of totals, the ranks that were not synchronised and why, and a
// table of the checks over the others.
func writeHCAReport(w io.Writer, rep hca.Report, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	network := fmt.Sprintf("seed %d, ±%g ppm", rep.Seed, rep.DriftPPM)
	if rep.Loss > 0 {
		network += fmt.Sprintf(", loss %g", rep.Loss)
	}
	lost := fmt.Sprintf("%d lost", rep.Lost)
	if rep.Lost > 0 {
		lost += fmt.Sprintf(": %d tried again, %d given up, %d fitpoints left out", rep.Lost-rep.GivenUp, rep.GivenUp, rep.FitpointsSkipped)
	}
	fmt.Fprintf(w, "%s, %d nodes over %s (%s): sync took %v, %d messages, %d exchanges (%s), %d fits rejected\n",
		rep.Algorithm, rep.Nodes, rep.Transport, network, time.Duration(rep.SyncDurationNS),
		rep.Messages, rep.Exchanges, lost, rep.Rejected)
	if len(rep.Unreached) > 0 || len(rep.Undelivered) > 0 {
		fmt.Fprintf(w, "pre-round check: %d of %d ranks answered no ping (an agent's round fails); %d models not acknowledged (those ranks keep their last)\n",
			len(rep.Unreached), rep.Nodes-1, len(rep.Undelivered))
	}
	if n := len(rep.Failed); n > 0 {
		if n == rep.Nodes-1 {
			fmt.Fprintf(w, "%d of %d ranks not synchronised:\n", n, rep.Nodes-1)
		} else {
			fmt.Fprintf(w, "%d of %d ranks not synchronised (the checks are over the other %d):\n", n, rep.Nodes-1, rep.Nodes-1-n)
		}
		for i, f := range rep.Failed {
			if i == hcaFailuresShown {
				fmt.Fprintf(w, "  and %d more (--json lists them all)\n", n-i)
				break
			}
			fmt.Fprintf(w, "  rank %d: %s\n", f.Rank, f.Error)
		}
		if n == rep.Nodes-1 {
			fmt.Fprintln(w, "no model to check")
			return nil
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "after sync\tmax |error| ns\tmedian |error| ns\tmax bound ns\tbound covers\t")
	for _, c := range rep.Checks {
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%.1f %%\t\n", time.Duration(c.AfterNS), c.MaxAbsErrorNS, c.MedianAbsErrorNS, c.MaxBoundNS, 100*c.BoundCoverage)
	}
	return tw.Flush()
}
