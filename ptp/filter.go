package ptp

import (
	"math"
	"slices"
)

// The probe's filtered estimate, beside the raw offset ptp4l computes.
//
// A Sync's one-way figure ms = t2 − t1 − corrections is the offset plus the
// master-to-slave delay of that frame; a Delay_Req's sm = t4 − t3 −
// corrections is the slave-to-master delay minus the offset. A frame held up
// (a busy CPU, a stalled virtual machine, a queue) only ever adds to its
// figure, so each is tested against the recent ones of its kind, as NTP's
// delay test does (delayGate, with a one-sided spread): a Sync's ms against
// the line through the window (it moves with the offset), a Delay_Req
// exchange by its mean path delay ((ms + sm) / 2, in which the offset
// cancels). A flagged Sync is still reported, with its raw offset, marked
// SyncOutlier; a flagged exchange stays out of the filtered path delay.
//
// The filtered offset of a Sync is the least-squares line through the raw
// offsets of the last FilterWindow unflagged Syncs (this one included when
// unflagged), recomputed with the filtered path delay and evaluated at this
// Sync's t2: a clock running at a constant frequency offset from the master
// is followed without lag, and the jitter of single frames is averaged over
// the window (the endpoint of such a line has about 2/sqrt(n) of one sample's
// spread). What it trades: a step in the offset, or a change of frequency,
// shows in full only after a window of Syncs (16 s at one Sync a second).
// The filtered path delay is the median of the last DelayFilter path delays
// of exchanges neither of whose frames was flagged. No filtered offset is
// given until that filter is full (the delay filter settled) and the window
// holds minFilterSyncs Syncs.

// FilterWindow is how many unflagged Syncs the filtered offset is fitted to.
const FilterWindow = 16

// minFilterSyncs is the fewest Syncs a filtered offset is fitted to.
const minFilterSyncs = 8

// gateWindow is how many recent values a delay gate keeps.
const gateWindow = 16

// Defaults of a delay gate: a value is flagged when its excess over the
// window's minimum is more than gateRatio times the typical excess (the
// median of the unflagged values' excesses, at least gateFloorNS), once the
// window holds gateMinSamples unflagged values.
const (
	gateRatio      = 8
	gateFloorNS    = 100
	gateMinSamples = 4
)

// delayGate flags a one-way figure far above the recent minimum. Queueing
// and stalls only ever add, so the spread that matters is one-sided: the
// typical excess over the minimum of the last gateWindow values, a median,
// which a few stalls in the window do not inflate. A level that rose for
// good stops being flagged once it fills the window.
type delayGate struct {
	v       [gateWindow]int64
	flagged [gateWindow]bool
	n, next int
}

// check records v and reports whether it is an outlier against the values
// before it.
func (g *delayGate) check(v int64) bool {
	lowest := int64(math.MaxInt64)
	for _, x := range g.v[:g.n] {
		lowest = min(lowest, x)
	}
	var excess [gateWindow]int64
	k := 0
	for i, x := range g.v[:g.n] {
		if !g.flagged[i] {
			excess[k] = x - lowest
			k++
		}
	}
	out := false
	if k >= gateMinSamples {
		slices.Sort(excess[:k])
		out = v-lowest > gateRatio*max(excess[k/2], gateFloorNS)
	}
	g.v[g.next], g.flagged[g.next] = v, out
	g.next = (g.next + 1) % gateWindow
	g.n = min(g.n+1, gateWindow)
	return out
}

// syncPoint is one unflagged Sync in the filtered offset's window.
type syncPoint struct {
	t2, ms int64 // its t2 and t2 − t1 − corrections
}

// filter is the probe's filtered estimate (see above). The zero value is
// ready.
type filter struct {
	syncGate, delayGate delayGate
	delays              []int64 // the last DelayFilter unflagged path delays
	scratch             []int64
	points              [FilterWindow]syncPoint
	n, next             int
}

// reset starts over (a new master).
func (f *filter) reset() { *f = filter{delays: f.delays[:0], scratch: f.scratch} }

// sync tests a Sync's one-way figure and, when it passes, adds it to the
// window; it reports whether it was flagged. The figure moves with the
// offset (a clock off in frequency by 5 ppm drifts 80 us over 16 Syncs), so
// what is tested is its excess over the line through the window, once the
// window holds minFilterSyncs Syncs; before that nothing is flagged.
func (f *filter) sync(t2, ms int64) bool {
	if f.n >= minFilterSyncs && f.syncGate.check(ms-int64(math.Round(f.fit(t2, 0)))) {
		return true
	}
	f.points[f.next] = syncPoint{t2, ms}
	f.next = (f.next + 1) % FilterWindow
	f.n = min(f.n+1, FilterWindow)
	return false
}

// fit returns the least-squares line through the window's points (ms − sub)
// evaluated at t: seconds from t, so the sums stay small.
func (f *filter) fit(t, sub int64) float64 {
	var sx, sy, sxx, sxy float64
	for _, p := range f.points[:f.n] {
		x := float64(p.t2-t) / 1e9
		y := float64(p.ms - sub)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	n := float64(f.n)
	den := n*sxx - sx*sx
	if den <= 0 {
		return sy / n
	}
	slope := (n*sxy - sx*sy) / den
	return (sy - slope*sx) / n
}

// delay tests a Delay_Req exchange by its mean path delay (the offset
// cancels in it, so a drifting clock does not move it; a frame of the
// exchange held up raises it) and adds the delay to the filtered path delay
// when neither it nor its Sync (syncFlagged) was flagged; it reports whether
// the exchange was flagged.
func (f *filter) delay(pathDelay int64, syncFlagged bool, length int) bool {
	out := f.delayGate.check(pathDelay)
	if out || syncFlagged {
		return out
	}
	if len(f.delays) == length {
		copy(f.delays, f.delays[1:])
		f.delays = f.delays[:length-1]
	}
	f.delays = append(f.delays, pathDelay)
	return false
}

// estimate returns the filtered offset at t2 and the filtered path delay;
// false until the delay filter holds length delays and the window
// minFilterSyncs Syncs.
func (f *filter) estimate(t2 int64, length int) (offset, pathDelay int64, ok bool) {
	if len(f.delays) < length || f.n < minFilterSyncs {
		return 0, 0, false
	}
	if cap(f.scratch) < len(f.delays) {
		f.scratch = make([]int64, 0, length)
	}
	pathDelay = medianOf(f.delays, f.scratch)
	return int64(math.Round(f.fit(t2, pathDelay))), pathDelay, true
}
