package gnss

import "math"

// Referee judges the system clock against a receiver, message by message:
// per device it keeps the latest TPV's fix mode and read time, and when the
// reference class (PPS or TOFF) last came, for at most maxDevices devices
// (the first seen; the messages of others judge nothing and are counted in
// Refused). Each device's verdicts are its own: the caller judges each
// receiver as a reference of its own. It is not safe for concurrent use.
type Referee struct {
	reference          Class
	staleNS, latencyNS int64
	devices            *Devices
	fix                map[string]refFix
	lastRef            map[string]int64 // the latest reference's time, or the device's first TOFF or PPS's
}

type refFix struct {
	mode Mode
	at   int64 // the TPV's read time
}

// NewReferee judges against the reference class, ClassPPS or ClassTOFF.
// staleNS is how old a TPV may be and how long the reference may be quiet;
// latencyNS (negative counts as 0) is how far the reference's stamp may lag
// its instant. It follows at most maxDevices devices (at least 1).
func NewReferee(reference Class, staleNS, latencyNS int64, maxDevices int) *Referee {
	return &Referee{reference: reference, staleNS: staleNS, latencyNS: max(latencyNS, 0), devices: NewDevices(maxDevices),
		fix: map[string]refFix{}, lastRef: map[string]int64{}}
}

// Refused is how many TPV, TOFF and PPS messages judged nothing because
// their device was beyond the first maxDevices.
func (r *Referee) Refused() uint64 { return r.devices.Refused() }

// VerdictKind says what a message judged.
type VerdictKind uint8

const (
	VerdictNone   VerdictKind = iota // nothing
	VerdictMissed                    // the reference sample due by TimeNS did not come
	VerdictSample                    // a sample at TimeNS: Synced, OffsetNS, BoundNS
)

// Verdict is what one message says of the system clock.
type Verdict struct {
	Kind     VerdictKind
	TimeNS   int64
	Synced   bool  // the device's latest TPV, at most stale old, has a 3D fix
	OffsetNS int64 // clock − real (Message.OffsetNS)
	BoundNS  int64 // |OffsetNS| + latency, saturating
}

// Judge takes every decoded message, read at read and recorded at t. A TPV
// is the device's fix as of read. A TOFF or PPS of the other class than the
// reference is VerdictMissed at t once the reference has been quiet for
// more than stale (counted from the device's first TOFF or PPS). A
// reference message is a VerdictSample, except before the device's first
// TPV. Anything else, and any message of a device beyond the first
// maxDevices, judges nothing. A verdict is of m.Device only.
func (r *Referee) Judge(m *Message, read, t int64) Verdict {
	switch {
	case m.Class != ClassTPV && m.Class != ClassTOFF && m.Class != ClassPPS:
		return Verdict{}
	case !r.devices.Admit(m.Device):
		return Verdict{}
	case m.Class == ClassTPV:
		r.fix[m.Device] = refFix{mode: m.Mode, at: read}
		return Verdict{}
	case m.Class != r.reference:
		if last, ok := r.lastRef[m.Device]; !ok {
			r.lastRef[m.Device] = t // the wait for the reference starts
		} else if t-last > r.staleNS {
			return Verdict{Kind: VerdictMissed, TimeNS: t}
		}
		return Verdict{}
	}
	r.lastRef[m.Device] = t
	fx, ok := r.fix[m.Device]
	if !ok {
		return Verdict{} // no TPV yet: whether there is a fix is not known
	}
	off := m.OffsetNS()
	return Verdict{Kind: VerdictSample, TimeNS: t, Synced: fx.mode == Mode3D && abs(t-fx.at) <= r.staleNS,
		OffsetNS: off, BoundNS: min(abs(off), math.MaxInt64-r.latencyNS) + r.latencyNS}
}

// abs is |v|, math.MaxInt64 for math.MinInt64.
func abs(v int64) int64 {
	if v == math.MinInt64 {
		return math.MaxInt64
	}
	return max(v, -v)
}
