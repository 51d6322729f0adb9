package timebase

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// ErrNoModel is returned by a Translator that has no samples yet.
var ErrNoModel = errors.New("no clock model yet")

// MaxSkew bounds the frequency error of an unknown clock when only one sample is
// known (the kernel's largest frequency adjustment, 500 ppm).
const MaxSkew = 500e-6

// Sample is one simultaneous reading of two clocks: local time Local and reference
// time Ref, both known to within a read window of DelayNS (the reference was read
// somewhere inside [Local-DelayNS/2, Local+DelayNS/2]).
type Sample struct {
	Local   int64
	Ref     int64
	DelayNS int64
}

// Translator keeps a rolling linear model from one clock domain (local) to another
// (reference), fitted over the last Window samples, and translates timestamps in
// both directions with an uncertainty. It is safe for concurrent use.
type Translator struct {
	from, to Domain
	window   int

	mu      sync.RWMutex
	samples []Sample // ring of the last window samples
	next    int
	points  []Point // scratch for fits
	model   LinearModel
	ok      bool
	ver     atomic.Uint64 // bumped (under mu) whenever the model changes
}

// NewTranslator returns a translator from domain from to domain to over the last
// window samples (at least 2).
func NewTranslator(from, to Domain, window int) *Translator {
	window = max(window, 2)
	return &Translator{
		from: from, to: to, window: window,
		samples: make([]Sample, 0, window),
		points:  make([]Point, 0, window),
	}
}

// From and To are the domains the translator maps between.
func (t *Translator) From() Domain { return t.from }

// To is the reference domain.
func (t *Translator) To() Domain { return t.to }

// Add records a sample and refits the model.
func (t *Translator) Add(s Sample) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.samples) < t.window {
		t.samples = append(t.samples, s)
	} else {
		t.samples[t.next] = s
		t.next = (t.next + 1) % t.window
	}
	t.refit()
	t.ver.Add(1)
}

// Reset forgets all samples, e.g. after a clock step.
func (t *Translator) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.samples = t.samples[:0]
	t.next = 0
	t.ok = false
	t.ver.Add(1)
}

func (t *Translator) refit() {
	t.points = t.points[:0]
	var delay int64
	for _, s := range t.samples {
		t.points = append(t.points, Point{X: s.Local, Offset: s.Local - s.Ref})
		delay += s.DelayNS
	}
	floor := (delay/int64(len(t.samples)) + 1) / 2
	m, err := Fit(t.points)
	if err != nil { // one sample (or all at one instant): offset only, skew unknown
		p := t.points[len(t.points)-1]
		m = LinearModel{Origin: p.X, Intercept: p.Offset, N: 1, MeanX: p.X, SlopeErr: MaxSkew}
	}
	m.FloorNS = floor
	t.model, t.ok = m, true
}

// Model returns the current model (local = from, reference = to).
func (t *Translator) Model() (LinearModel, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if !t.ok {
		return LinearModel{}, fmt.Errorf("%s->%s: %w", t.from, t.to, ErrNoModel)
	}
	return t.model, nil
}

// Version changes whenever the model does (a sample added, a reset): a
// caller that keeps a copy of the model refreshes it when Version moved.
func (t *Translator) Version() uint64 { return t.ver.Load() }

// ModelAt returns the current model and the version it belongs to.
func (t *Translator) ModelAt() (LinearModel, uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	v := t.ver.Load()
	if !t.ok {
		return LinearModel{}, v, fmt.Errorf("%s->%s: %w", t.from, t.to, ErrNoModel)
	}
	return t.model, v, nil
}

// Translate maps a timestamp in either of the translator's domains to the other.
// The result's uncertainty adds the model's to the input's.
func (t *Translator) Translate(ts Timestamp) (Timestamp, error) {
	m, err := t.Model()
	if err != nil {
		return Timestamp{}, err
	}
	switch ts.Domain {
	case t.from:
		return Timestamp{NS: m.Apply(ts.NS), Domain: t.to, UncertaintyNS: ts.UncertaintyNS + m.Uncertainty(ts.NS)}, nil
	case t.to:
		x := m.Invert().Apply(ts.NS)
		return Timestamp{NS: x, Domain: t.from, UncertaintyNS: ts.UncertaintyNS + m.Uncertainty(x)}, nil
	}
	return Timestamp{}, fmt.Errorf("translate %s with a %s->%s translator: wrong domain", ts.Domain, t.from, t.to)
}
