package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
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
	page := htmlPage{Title: title, Header: header(rs)}
	for _, r := range rs {
		page.Rows = append(page.Rows, row(r))
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
		sec := htmlSeries{Name: rs[i].Name(), ID: fmt.Sprintf("series-%d", i+1)}
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
	if err := htmlTemplate.Execute(&b, page); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	f := filepath.Join(dir, "index.html")
	if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("html: %w", err)
	}
	fmt.Fprintf(errw, "wrote %s (%d series, %d plots)\n", f, len(series), images)
	return nil
}

type htmlPage struct {
	Title        string
	Header       []string
	Rows         [][]string
	Notes        []string
	Sensor, Unit string
	Correlations []htmlCorrelation
	NoPlots      string
	Series       []htmlSeries
}

type htmlSeries struct {
	Name, ID string
	Images   []PlotImage
	Missing  []PlotMissing
}

type htmlCorrelation struct {
	Series, Coefficient, CI, R, Windows, Range, AtMean, Error string
	Notes                                                     []string
}

// htmlTemplate is the page: no script, no external URL (the favicon is an
// empty data: URI, so a browser asks for none).
var htmlTemplate = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>monagent report: {{.Title}}</title>
<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1100px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; font-size: 0.9em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: right; white-space: nowrap; }
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
<h1>monagent report: {{.Title}}</h1>
<h2>Statistics (the reference study's Table I)</h2>
<div class="wide"><table>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}
<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}
</tbody></table></div>
<p>µ is the mean offset (accuracy), σ the sample standard deviation (precision); the |x| columns are percentiles of the absolute offset; ADEV at 1 s or the smallest τ; drift with its 95 % half interval; ≤ columns: the share of samples within each bound.</p>
{{if .Notes}}<h2>Notes</h2>
<ul>{{range .Notes}}
<li>{{.}}</li>{{end}}
</ul>{{end}}
{{if .Correlations}}<h2>Frequency against {{.Sensor}}</h2>
<p>Each clock's frequency offset is the least-squares slope of its offsets over each window; the sensor's value is the mean of its readings in the window. The coefficient is the least-squares slope of frequency against the sensor, with its 95 % interval (which assumes independent windows).</p>
<div class="wide"><table>
<thead><tr><th>series</th><th>ppb/{{.Unit}}</th><th>95 % interval</th><th>r</th><th>windows</th><th>sensor range</th><th>frequency</th></tr></thead>
<tbody>{{range .Correlations}}
<tr><td>{{.Series}}</td>{{if .Error}}<td colspan="6" class="missing">no coefficient: {{.Error}}</td>{{else}}<td>{{.Coefficient}}</td><td>{{.CI}}</td><td>{{.R}}</td><td>{{.Windows}}</td><td>{{.Range}}</td><td>{{.AtMean}}</td>{{end}}</tr>{{end}}
</tbody></table></div>
{{range .Correlations}}{{$s := .Series}}{{range .Notes}}<p>{{$s}}: {{.}}</p>
{{end}}{{end}}{{end}}
{{if .NoPlots}}<p class="missing">{{.NoPlots}}</p>{{end}}
{{range .Series}}<section>
<h2 id="{{.ID}}">{{.Name}}</h2>
{{range .Images}}<figure><a href="{{.SVG}}"><img src="{{.PNG}}" width="768" height="480" alt="{{.Caption}}"></a><figcaption>{{.Caption}} (<a href="{{.SVG}}">SVG</a>)</figcaption></figure>
{{end}}{{range .Missing}}<p class="missing">No {{.Caption}}: {{.Reason}}.</p>
{{end}}</section>
{{end}}</body>
</html>
`))
