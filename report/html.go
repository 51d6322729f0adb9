package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/monagent/monagent/stats"
)

// WriteHTML writes dir/index.html, one page a person opens without a
// network: the reference study's Table I of rs, the notes, each series'
// plots (PNG files beside the page, referenced by relative name, each
// linking its SVG) and, for a plot left out, why; and the correlation when
// asked (--correlate). It says on errw what it wrote. A build without plots
// (32-bit ARM) writes the page without them and says so on it.
func WriteHTML(dir, title string, series []*Series, rs []*Result, errw io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	page := htmlPage{Title: title}
	for _, h := range header(rs) {
		page.Header = append(page.Header, htmlCell(h))
	}
	for _, r := range rs {
		var cells []safeHTML
		for _, c := range row(r) {
			cells = append(cells, htmlCell(c))
		}
		page.Rows = append(page.Rows, cells)
	}
	var notes strings.Builder
	if err := writeNotes(&notes, rs, ""); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(notes.String()), "\n") {
		if l != "" {
			page.Notes = append(page.Notes, l)
		}
	}
	images := 0
	for i, s := range series {
		sec := htmlSeries{Name: rs[i].Name(), ID: fmt.Sprintf("series-%d", i+1), Stability: stabilityRows(rs[i])}
		if sec.Name == "" {
			sec.Name = "(all)"
		}
		if c := rs[i].Correlation; c != nil {
			page.Sensor, page.Unit = c.Sensor, c.Unit
			hc := htmlCorrelation{Series: sec.Name, Error: c.Error, Notes: c.Notes}
			if c.Error == "" {
				hc.Coefficient = fmt.Sprintf("%.4g", c.PPBPerUnit)
				hc.CI = fmt.Sprintf("[%.4g, %.4g]", c.PPBPerUnitCI[0], c.PPBPerUnitCI[1])
				hc.R = fmt.Sprintf("%.3f", c.R)
				hc.Windows = fmt.Sprintf("%d of %s", c.Windows, time.Duration(c.WindowNS))
				hc.Range = fmt.Sprintf("%.4g to %.4g %s", c.SensorMin, c.SensorMax, c.Unit)
				hc.AtMean = fmt.Sprintf("%.4g ppb at %.4g %s", c.FrequencyPPB, c.SensorMean, c.Unit)
			}
			page.Correlations = append(page.Correlations, hc)
		}
		set, err := WritePlotSet(dir, title, s, rs[i])
		if errors.Is(err, ErrNoPlots) {
			page.NoPlots = err.Error()
		} else if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		sec.Images, sec.Missing = set.Images, set.Missing
		images += len(set.Images)
		page.Series = append(page.Series, sec)
	}
	var b bytes.Buffer
	page.write(&b)
	f := filepath.Join(dir, "index.html")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	fmt.Fprintf(errw, "wrote %s (%d series, %d plots)\n", f, len(series), images)
	return nil
}

// htmlCell is a table cell that wraps (in a table of class fit) only where a
// reader expects it to:
// after a series name's commas and before a "±" interval or an "@τ" (a
// number and its unit stay together), so that Table I fits a laptop's
// window.
func htmlCell(c string) safeHTML {
	var b strings.Builder
	for i, part := range strings.Split(c, " ") {
		if i > 0 {
			if strings.HasPrefix(part, "±") || strings.HasPrefix(part, "@") {
				b.WriteString(" ")
			} else {
				b.WriteString("&nbsp;")
			}
		}
		b.WriteString(strings.ReplaceAll(html.EscapeString(part), ",", ",<wbr>"))
	}
	return safeHTML(b.String())
}

// htmlStability is one row of a series' stability table: τ, then each
// deviation with its interval and terms.
type htmlStability struct {
	Tau, ADev, MDev, TDev, MTIE safeHTML
	N, K                        int
}

// stabilityRows are r's deviations by τ (ADEV's τ; the others share them
// where they have the point).
func stabilityRows(r *Result) []htmlStability {
	at := func(ps []Point, tau float64, ci bool) string {
		for _, p := range ps {
			if p.TauS == tau {
				if !ci {
					return stats.FormatNS(p.Value)
				}
				return formatPoint(p)
			}
		}
		return "-"
	}
	var out []htmlStability
	for _, p := range r.ADev {
		tdev := "-"
		for _, q := range r.TDev {
			if q.TauS == p.TauS {
				tdev = stats.FormatNS(q.Value)
				if rel := q.RelCI(); rel > 0 {
					tdev += " ±" + fixedSig(100*rel, 2) + " %"
				}
			}
		}
		row := htmlStability{Tau: htmlCell(FormatTau(p.TauS)), ADev: htmlCell(formatPoint(p)), MDev: htmlCell(at(r.MDev, p.TauS, true)),
			TDev: htmlCell(tdev), MTIE: htmlCell(at(r.MTIE, p.TauS, false)), N: p.N, K: p.NonOverlapping}
		out = append(out, row)
	}
	return out
}

type htmlPage struct {
	Title        string
	Header       []safeHTML
	Rows         [][]safeHTML
	Notes        []string
	Sensor, Unit string
	Correlations []htmlCorrelation
	NoPlots      string
	Series       []htmlSeries
}

type htmlSeries struct {
	Name, ID  string
	Images    []PlotImage
	Missing   []PlotMissing
	Stability []htmlStability
}

type htmlCorrelation struct {
	Series, Coefficient, CI, R, Windows, Range, AtMean, Error string
	Notes                                                     []string
}

// safeHTML is markup already escaped.
type safeHTML string

// esc escapes text for the page, as html/template does (it adds "+").
var esc = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;", "\x00", "\uFFFD").Replace

// write writes the page: no script, no external URL (the favicon is an
// empty data: URI, so a browser asks for none). Built by hand, not by
// html/template, whose reflection keeps every exported method in the
// binary (docs/performance.md); every value is escaped here.
func (p *htmlPage) write(b *bytes.Buffer) {
	w := b.WriteString
	w(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>monagent report: ` + esc(p.Title) + `</title>
<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.4em; text-align: right; vertical-align: top; white-space: nowrap; }
th { vertical-align: bottom; }
table.fit th, table.fit td { white-space: normal; }
th:first-child, td:first-child { text-align: left; }
th { background: #eef2f7; }
.wide { overflow-x: auto; }
figure { margin: 1em 0; }
img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.9em; color: #555; }
.missing { color: #8a4b00; background: #fff6e5; padding: 0.4em 0.6em; border-left: 3px solid #e0a000; }
</style>
</head>
<body>
<h1>monagent report: ` + esc(p.Title) + `</h1>
<h2>Statistics (the reference study's Table I)</h2>
<div class="wide"><table class="fit">
<thead><tr>`)
	for _, h := range p.Header {
		w("<th>" + string(h) + "</th>")
	}
	w("</tr></thead>\n<tbody>")
	for _, r := range p.Rows {
		w("\n<tr>")
		for _, c := range r {
			w("<td>" + string(c) + "</td>")
		}
		w("</tr>")
	}
	w(`
</tbody></table></div>
<p>µ is the mean offset (accuracy), σ the sample standard deviation (precision); the |x| columns are percentiles of the absolute offset; ADEV at 1 s or the smallest τ, with its 68 % (±1σ) interval relative to it (see each series' stability table); drift with its 95 % half interval, in ppm, ppb or ppt; ≤ columns: the share of samples within each bound.</p>
`)
	if len(p.Notes) > 0 {
		w("<h2>Notes</h2>\n<ul>")
		for _, n := range p.Notes {
			w("\n<li>" + esc(n) + "</li>")
		}
		w("\n</ul>")
	}
	w("\n")
	if len(p.Correlations) > 0 {
		w(`<h2>Frequency against ` + esc(p.Sensor) + `</h2>
<p>Each clock's frequency offset is the least-squares slope of its offsets over each window; the sensor's value is the mean of its readings in the window. The coefficient is the least-squares slope of frequency against the sensor, with its 95 % interval (which assumes independent windows).</p>
<div class="wide"><table>
<thead><tr><th>series</th><th>ppb/` + esc(p.Unit) + `</th><th>95 % interval</th><th>r</th><th>windows</th><th>sensor range</th><th>frequency</th></tr></thead>
<tbody>`)
		for _, c := range p.Correlations {
			w("\n<tr><td>" + esc(c.Series) + "</td>")
			if c.Error != "" {
				w(`<td colspan="6" class="missing">no coefficient: ` + esc(c.Error) + "</td>")
			} else {
				for _, v := range []string{c.Coefficient, c.CI, c.R, c.Windows, c.Range, c.AtMean} {
					w("<td>" + esc(v) + "</td>")
				}
			}
			w("</tr>")
		}
		w("\n</tbody></table></div>\n")
		for _, c := range p.Correlations {
			for _, n := range c.Notes {
				w("<p>" + esc(c.Series) + ": " + esc(n) + "</p>\n")
			}
		}
	}
	w("\n")
	if p.NoPlots != "" {
		w(`<p class="missing">` + esc(p.NoPlots) + "</p>")
	}
	w("\n")
	for _, s := range p.Series {
		w("<section>\n<h2 id=\"" + esc(s.ID) + "\">" + esc(s.Name) + "</h2>\n")
		for _, im := range s.Images {
			w(`<figure><a href="` + esc(im.SVG) + `"><img src="` + esc(im.PNG) + `" width="768" height="480" alt="` + esc(im.Caption) + `"></a><figcaption>` +
				esc(im.Caption) + ` (<a href="` + esc(im.SVG) + `">SVG</a>)</figcaption></figure>` + "\n")
		}
		for _, m := range s.Missing {
			w(`<p class="missing">No ` + esc(m.Caption) + ": " + esc(m.Reason) + ".</p>\n")
		}
		if len(s.Stability) > 0 {
			w(`<h3>Stability by τ</h3>
<div class="wide"><table>
<thead><tr><th>τ</th><th>ADEV ±1σ</th><th>MDEV ±1σ</th><th>TDEV ±1σ</th><th>MTIE</th><th>n: ADEV terms</th><th>K: non-overlapping</th></tr></thead>
<tbody>`)
			for _, r := range s.Stability {
				w("\n<tr><td>" + string(r.Tau) + "</td><td>" + string(r.ADev) + "</td><td>" + string(r.MDev) + "</td><td>" + string(r.TDev) + "</td><td>" + string(r.MTIE) +
					"</td><td>" + strconv.Itoa(r.N) + "</td><td>" + strconv.Itoa(r.K) + "</td></tr>")
			}
			w(`
</tbody></table></div>
<p>n is the number of terms the overlapping ADEV averages at τ = m τ0; K = ⌈n/m⌉ of them are m apart, the terms of the non-overlapping estimator (consecutive τ-averages). The ±1σ (68 %) interval is the deviation times 1 ∓ 1/√K, the simple interval of NIST SP 1065 §5.3.1 with K as its N, which ignores the noise type; where K is 1 the point bounds nothing below (its bar reaches the plot's bottom). MDEV and TDEV count their own terms (the JSON has them).</p>
`)
		}
		w("</section>\n")
	}
	w("</body>\n</html>\n")
}
