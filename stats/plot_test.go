//go:build !arm

package stats

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
)

func TestTimeUnitAndFormatNS(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{12, "12 ns"}, {-1500, "-1.5 µs"}, {2.5e6, "2.5 ms"}, {3e9, "3 s"}} {
		if got := FormatNS(tc.v); got != tc.want {
			t.Errorf("FormatNS(%g) = %q, want %q", tc.v, got, tc.want)
		}
	}
}

// TestPlotsRender draws every plot of a small series and checks the PNG
// decodes at the documented size and the SVG carries the title and legend.
func TestPlotsRender(t *testing.T) {
	x := make([]int64, 64)
	ts := make([]int64, 64)
	for i := range x {
		ts[i] = int64(i) * 1e9
		x[i] = int64((i*37)%23) - 11 + int64(i)
	}
	acc, _ := NewAccumulator(Config{})
	acc.AddSlice(x)
	h, _ := acc.Histogram(12)
	cdf, _ := acc.CDF(100)
	d, _ := FitDrift(ts, x)
	adev, _ := ADev(x, 1e9, nil)
	mdev, _ := MDev(x, 1e9, nil)
	dir := t.TempDir()
	cases := map[string]func() (*plot.Plot, error){
		"hist": func() (*plot.Plot, error) { return PlotHistogram(h, "offset", "hist title") },
		"cdf": func() (*plot.Plot, error) {
			return PlotCDF(cdf, []Quantile{{P: 0.75, Value: 40}}, "offset", "cdf title")
		},
		"offset": func() (*plot.Plot, error) { return PlotOffset(ts, x, &d, "offset", "offset title") },
		"adev": func() (*plot.Plot, error) {
			return PlotStability([]Curve{{"ADEV", adev}, {"MDEV", mdev}}, "ADEV", "adev title", false)
		},
	}
	for name, mk := range cases {
		p, err := mk()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, ext := range []string{".png", ".svg"} {
			f := filepath.Join(dir, name+ext)
			if err := SavePlot(p, PlotWidth, PlotHeight, f); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if ext == ".svg" {
				if !strings.Contains(string(b), name+" title") {
					t.Errorf("%s lacks its title", f)
				}
				continue
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if got := img.Bounds(); got.Dx() != 768 || got.Dy() != 480 {
				t.Errorf("%s is %v, want 768x480", f, got)
			}
		}
	}
	if err := SavePlot(plot.New(), PlotWidth, PlotHeight, filepath.Join(dir, "x.gif")); err == nil {
		t.Error("SavePlot writes .gif")
	}
	if _, err := PlotStability([]Curve{{"ADEV", nil}}, "ADEV", "empty", false); err == nil {
		t.Error("PlotStability draws nothing without an error")
	}
	if _, err := PlotHistogram(Histogram{}, "offset", "empty"); err == nil {
		t.Error("PlotHistogram draws no bins without an error")
	}
}

// TestDecimateKeepsExtremes: a long series is drawn as per-bucket minima and
// maxima, in time order, so every spike stays visible.
func TestDecimateKeepsExtremes(t *testing.T) {
	n := 100_000
	ts, x := make([]int64, n), make([]int64, n)
	for i := range x {
		ts[i] = int64(i) * 1e9
	}
	x[12345], x[67890] = 5000, -7000
	xy := decimate(ts, x, 1, 100)
	if len(xy) != 200 {
		t.Fatalf("%d points", len(xy))
	}
	var hi, lo float64
	for i, p := range xy {
		hi, lo = max(hi, p.Y), min(lo, p.Y)
		if i > 0 && p.X < xy[i-1].X {
			t.Fatalf("point %d goes back in time", i)
		}
	}
	if hi != 5000 || lo != -7000 {
		t.Errorf("extremes %g, %g", hi, lo)
	}
	if got := decimate(ts[:150], x[:150], 1, 100); len(got) != 150 {
		t.Errorf("short series decimated to %d", len(got))
	}
}

// One tau, or one deviation at every tau (a constant offset read with one
// granularity), is drawn: the plotter's ±1 padding of a flat range would
// reach below zero, which a log axis cannot draw (report --plots panicked on
// `clock=tai,ref=realtime` now and then).
func TestPlotStabilityOfFlatCurves(t *testing.T) {
	dir := t.TempDir()
	for name, pts := range map[string][]Deviation{
		"one tau":        {{Tau: 1_000_000_000, Value: 3e-9}},
		"flat deviation": {{Tau: 1_000_000_000, Value: 3e-9}, {Tau: 2_000_000_000, Value: 3e-9}, {Tau: 4_000_000_000, Value: 3e-9}},
	} {
		p, err := PlotStability([]Curve{{"ADEV", pts}}, "ADEV", name, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := SavePlot(p, PlotWidth, PlotHeight, filepath.Join(dir, "flat.png")); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
