//go:build !arm

package report

import (
	"errors"

	"github.com/monagent/monagent/stats"
)

// correlationPlots draws a correlation's frequency against the sensor
// (NAME-freqsensor) and both against time (NAME-freqtime) with save, or
// says with missing why it cannot.
func correlationPlots(c *Correlation, title string, save func(kind, caption string, panels []plotT) error, missing func(kind string, err error)) error {
	if c.Error != "" {
		err := errors.New("no coefficient: " + c.Error)
		missing("freqsensor", err)
		missing("freqtime", err)
		return nil
	}
	v, ppb := make([]float64, len(c.pairs)), make([]float64, len(c.pairs))
	ft, fitted := make([]int64, len(c.pairs)), make([]float64, len(c.pairs))
	for i, p := range c.pairs {
		v[i], ppb[i], ft[i], fitted[i] = p.v, p.ppb, p.t, c.line.At(p.v)
	}
	p, err := stats.PlotFrequencySensor(v, ppb, c.line, c.quantity, c.Unit, "frequency against "+c.quantity+"\n"+title+"\n"+c.Sensor)
	if err != nil {
		missing("freqsensor", err)
	} else if err := save("freqsensor", plotCaptions["freqsensor"], []plotT{p}); err != nil {
		return err
	}
	t, all := make([]int64, len(c.freq)), make([]float64, len(c.freq))
	for i, f := range c.freq {
		t[i], all[i] = f.Mid(), f.PPB
	}
	// The sensor's readings over the clock's span.
	end := c.freq[len(c.freq)-1].Last
	var st []int64
	var sv []float64
	for i, x := range c.sensorT {
		if x >= c.t0 && x <= end {
			st, sv = append(st, x), append(sv, c.sensorV[i])
		}
	}
	ps, err := stats.PlotFrequencyTime(t, all, ft, fitted, st, sv, c.t0, c.quantity, c.Unit, "frequency and "+c.quantity+" against time\n"+title+"\n"+c.Sensor)
	if err != nil {
		missing("freqtime", err)
		return nil
	}
	return save("freqtime", plotCaptions["freqtime"], ps)
}
