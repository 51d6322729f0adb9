package report

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
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

// tableHeader is the reference study's Table I, one row per series, then
// the share of |x| within each bound (header).
var tableHeader = []string{"series", "n", "µ", "σ", "|x| p75", "|x| p95", "|x| p99", "max |x|", "ADEV ±1σ @τ", "drift ±95 %"}

// header is tableHeader and a "≤BOUND" column per bound of the results.
func header(rs []*Result) []string {
	h := slices.Clone(tableHeader)
	if len(rs) > 0 {
		for _, sh := range rs[0].Shares {
			h = append(h, "≤"+stats.FormatNS(float64(sh.BoundNS)))
		}
	}
	return h
}

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
		drift = FormatDrift(*r.DriftPPM, (r.DriftPPMCI[1]-r.DriftPPMCI[0])/2)
	}
	if p, ok := r.adevPoint(); ok {
		adev = formatPoint(p) + " @" + FormatTau(p.TauS)
	}
	b, mx := r.base(), NS{Rel: float64(r.MaxAbsNS)}
	if r.Relative != nil {
		mx = nsFromU(absU(b), float64(r.Relative.MaxAbsNS))
	}
	cells := []string{name, fmt.Sprint(r.N), cellNS(r.MeanNS, b), std, cellNS(r.AbsP75NS, b),
		cellNS(r.AbsP95NS, b), cellNS(r.AbsP99NS, b), cellNS(mx, b), adev, drift}
	for _, sh := range r.Shares {
		cells = append(cells, sharePercent(sh.Count, r.N))
	}
	return cells
}

// formatPoint formats a deviation and, when it has one, its interval as a
// relative ±1σ: "1.75e-8 ±1.2 %".
func formatPoint(p Point) string {
	s := FormatDev(p.Value)
	if rel := p.RelCI(); rel > 0 {
		s += " ±" + fixedSig(100*rel, 2) + " %"
	}
	return s
}

// sharePercent formats count of n as a percentage with at most 2 decimals
// that never rounds a share to 0 % or 100 % it is not.
func sharePercent(count, n int64) string {
	switch p := 100 * float64(count) / float64(n); {
	case count == n:
		return "100 %"
	case count == 0:
		return "0 %"
	case p >= 99.995:
		return ">99.99 %"
	case p < 0.005:
		return "<0.01 %"
	default:
		s := strings.TrimRight(strings.TrimRight(strconv.FormatFloat(p, 'f', 2, 64), "0"), ".")
		return s + " %"
	}
}

// WriteText writes the results as an aligned text table, then the notes.
func WriteText(w io.Writer, rs []*Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header(rs), "\t"))
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
	h := header(rs)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.ReplaceAll(strings.Join(h, " | "), "|x|", `\|x\|`), strings.Repeat("---|", len(h)))
	for _, r := range rs {
		cells := row(r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	return writeNotes(w, rs, "- ")
}

// baseNote explains a far series' cells "b+…" (cellNS).
func baseNote(r *Result) string {
	if b := r.base(); b < 0 {
		return fmt.Sprintf("b = %d ns, the first value: µ is relative to b, the |x| columns to |b|, exactly", b)
	}
	return fmt.Sprintf("b = %d ns, the first value: µ and the |x| columns are relative to it, exactly", r.base())
}

func writeNotes(w io.Writer, rs []*Result, bullet string) error {
	first := true
	for _, r := range rs {
		notes := r.Notes
		if r.base() != 0 {
			notes = append([]string{baseNote(r)}, notes...)
		}
		for _, n := range notes {
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
