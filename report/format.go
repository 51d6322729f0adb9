package report

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"

	"github.com/monagent/monagent/stats"
)

// WriteJSON writes the results as a JSON list, one object per series.
func WriteJSON(w io.Writer, rs []*Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if rs == nil {
		rs = []*Result{}
	}
	return enc.Encode(rs)
}

// tableHeader is the reference study's Table I, one row per series.
var tableHeader = []string{"series", "n", "µ", "σ", "|x| p75", "|x| p95", "|x| p99", "max |x|", "ADEV", "drift ppm"}

func row(r *Result) []string {
	name := r.Name()
	if name == "" {
		name = "(all)"
	}
	std, drift, adev := "-", "-", "-"
	if r.N > 1 {
		std = stats.FormatNS(r.StdNS)
	}
	if r.DriftPPM != nil {
		drift = fmt.Sprintf("%.4g ±%.2g", *r.DriftPPM, (r.DriftPPMCI[1]-r.DriftPPMCI[0])/2)
	}
	if tau, v, ok := r.ADevAt(); ok {
		adev = fmt.Sprintf("%.3g @%gs", v, tau)
	}
	return []string{name, fmt.Sprint(r.N), stats.FormatNS(r.MeanNS), std, stats.FormatNS(r.AbsP75NS),
		stats.FormatNS(r.AbsP95NS), stats.FormatNS(r.AbsP99NS), stats.FormatNS(float64(r.MaxAbsNS)), adev, drift}
}

// WriteText writes the results as an aligned text table, then the notes.
func WriteText(w io.Writer, rs []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t"))
	for _, r := range rs {
		fmt.Fprintln(tw, strings.Join(row(r), "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeNotes(w, rs, "")
}

// WriteMarkdown writes the results as a markdown table, then the notes.
func WriteMarkdown(w io.Writer, rs []*Result) error {
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.ReplaceAll(strings.Join(tableHeader, " | "), "|x|", `\|x\|`), strings.Repeat("---|", len(tableHeader)))
	for _, r := range rs {
		cells := row(r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	return writeNotes(w, rs, "- ")
}

func writeNotes(w io.Writer, rs []*Result, bullet string) error {
	first := true
	for _, r := range rs {
		for _, n := range r.Notes {
			if first {
				fmt.Fprintln(w)
				first = false
			}
			name := r.Name()
			if name == "" {
				name = "(all)"
			}
			if _, err := fmt.Fprintf(w, "%s%s: %s\n", bullet, name, n); err != nil {
				return err
			}
		}
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._=-]+`)

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
