package timebase

import (
	"math"
	"math/rand/v2"
	"sync"
)

// VirtualClock is a simulated clock over a real base clock:
//
//	C(t) = t + Offset + Skew·(t − t0) + wander(t)
//
// where t is the base clock, t0 its reading when the virtual clock was made, Skew a
// constant frequency error and wander a random walk of the frequency (so the phase
// error grows like a real oscillator's). With Wander zero the clock is exact and
// its true offset from the base is known at every instant, which is what makes the
// clock synchronisation algorithms testable against ground truth.
type VirtualClock struct {
	base   Clock
	domain Domain
	offset int64
	skew   float64 // dimensionless: 1e-6 is 1 ppm
	t0     int64

	mu        sync.Mutex
	sigma     float64 // random-walk frequency noise per sqrt(second)
	rng       *rand.Rand
	lastBase  int64
	freq      float64 // current wander frequency (dimensionless)
	wanderAcc float64 // accumulated wander phase (ns)
}

// VirtualConfig describes a virtual clock.
type VirtualConfig struct {
	Domain   Domain
	OffsetNS int64   // initial offset from the base clock
	SkewPPM  float64 // constant frequency error
	// WanderPPMPerSqrtS is the standard deviation of the frequency random walk after
	// one second (ppm); zero disables wander.
	WanderPPMPerSqrtS float64
	Seed              uint64 // seeds the wander; equal seeds give equal clocks
}

// NewVirtualClock returns a virtual clock over base.
func NewVirtualClock(base Clock, cfg VirtualConfig) (*VirtualClock, error) {
	t0, err := base.Now()
	if err != nil {
		return nil, err
	}
	return &VirtualClock{
		base:     base,
		domain:   cfg.Domain,
		offset:   cfg.OffsetNS,
		skew:     cfg.SkewPPM * 1e-6,
		t0:       t0,
		sigma:    cfg.WanderPPMPerSqrtS * 1e-6,
		rng:      rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		lastBase: t0,
	}, nil
}

// Domain implements Clock.
func (v *VirtualClock) Domain() Domain { return v.domain }

// Now implements Clock.
func (v *VirtualClock) Now() (int64, error) {
	t, err := v.base.Now()
	if err != nil {
		return 0, err
	}
	return v.At(t), nil
}

// At returns the virtual time at base time t. Wander advances only forward in base
// time; an earlier t reuses the wander accumulated so far.
func (v *VirtualClock) At(t int64) int64 {
	w := int64(0)
	if v.sigma != 0 {
		v.mu.Lock()
		if dt := t - v.lastBase; dt > 0 {
			sec := float64(dt) / 1e9
			v.wanderAcc += v.freq * float64(dt)
			v.freq += v.sigma * math.Sqrt(sec) * v.rng.NormFloat64()
			v.lastBase = t
		}
		w = roundNS(v.wanderAcc)
		v.mu.Unlock()
	}
	return t + v.offset + roundNS(v.skew*float64(t-v.t0)) + w
}

// TrueModel returns the exact model of this clock (local) relative to its base
// (reference), ignoring wander: the ground truth for synchronisation tests.
func (v *VirtualClock) TrueModel() LinearModel {
	// offset(x) = x - t where x = t + o + s(t - t0)  =>  t = (x - o + s·t0)/(1+s)
	// At x = X0 := t0 + o, offset = o; slope d(offset)/dx = s/(1+s).
	return LinearModel{Origin: v.t0 + v.offset, Intercept: v.offset, Slope: v.skew / (1 + v.skew)}
}
