package ptp

import (
	"cmp"
	"encoding/binary"
	"errors"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/reject"
	"github.com/monagent/monagent/sockts"
)

// Reject says why a PTP message was not used.
type Reject uint8

// Reject reasons; each has a counter.
const (
	RejectNone      Reject = iota
	RejectShort            // shorter than its header or body
	RejectOversized        // longer than any PTP message we take
	RejectVersion          // not PTPv2
	RejectDomain           // another domain
	RejectType             // a message type a slave does not take
	RejectMaster           // not from the best master
	RejectSequence         // no pending Sync / Delay_Req with that sequence id
	RejectForeign          // a Delay_Resp for another port
	RejectMalformed        // the library could not decode it (bad length, TLVs)
	RejectLate             // a Delay_Resp to a Delay_Req already abandoned (timed out, no t3)
	numRejects
)

// NumRejects is the number of reject reasons (the length of Slave.Rejects).
const NumRejects = numRejects

var rejectNames = [...]string{"none", "short", "oversized", "version", "domain", "type", "master", "sequence", "foreign", "malformed", "late"}

func (r Reject) String() string { return reject.Name(rejectNames[:], uint8(r)) }

// RejectError is a message that was not used, with its reason.
type RejectError = reject.Error[Reject]

func rejectf(r Reject, format string, a ...any) error {
	return reject.Errorf("ptp message", r, format, a...)
}

// RejectOf returns the reason of a *RejectError, or RejectNone.
func RejectOf(err error) Reject { return reject.Of[Reject](err) }

// MaxMessage is the largest PTP message the probe accepts (announces with TLVs
// fit easily).
const MaxMessage = 512

const headerSize = 34

// Exchange is one measurement, made at every Sync once a path delay is known
// (one at most per Sync: T2, the Sync's own receive time, is its time):
// the Sync's t1 (master send) and t2 (our receive) with its corrections, and
// the mean path delay, the moving median of the last DelayFilter Delay_Req
// exchanges (t3 our send, t4 master receive), as ptp4l's delay filter does.
// Offset = t2 - t1 - corrections - path delay: our clock minus the master's.
type Exchange struct {
	Master      protocol.PortIdentity
	Seq         uint16
	T1, T2      int64
	CorrSyncNS  int64
	PathDelayNS int64 // filtered mean path delay
	OffsetNS    int64
	// The latest Delay_Req exchange behind PathDelayNS.
	T3, T4      int64
	CorrDelayNS int64
	DelayNS     int64 // its own mean path delay, ((t2-t1)+(t4-t3))/2 of its Sync
	// SyncOutlier: this Sync's t2 − t1 − corrections rose far above the
	// recent minimum (the probe's delay test, see filter.go); OffsetNS is
	// reported all the same but is not to be trusted. DelayOutlier: the
	// latest Delay_Req exchange's mean path delay rose far above the recent
	// minimum (a frame of it held up); its delay is
	// kept out of the filtered path delay (not out of PathDelayNS, which is
	// ptp4l's).
	SyncOutlier, DelayOutlier bool
	// Filtered: FilteredOffsetNS and FilteredPathDelayNS are set, once the
	// filtered path delay's filter is full (see filter.go: the
	// least-squares line through the last FilterWindow unflagged Syncs'
	// offsets, evaluated at this T2).
	Filtered                              bool
	FilteredOffsetNS, FilteredPathDelayNS int64
	// Where t2 and the latest t3 came from (set by Probe): hardware ones were
	// translated from the NIC's PHC to REALTIME.
	SyncSource, DelaySource sockts.Source
}

// MeanPathDelay is IEEE 1588's mean path delay of one Sync and Delay_Req pair.
func MeanPathDelay(t1, t2, t3, t4, corrSync, corrDelay int64) int64 {
	return ((t2 - t1 - corrSync) + (t4 - t3 - corrDelay)) / 2
}

// medianOf returns the median of v (sorted copy in scratch).
func medianOf(v, scratch []int64) int64 {
	scratch = append(scratch[:0], v...)
	for i := 1; i < len(scratch); i++ {
		for j := i; j > 0 && scratch[j] < scratch[j-1]; j-- {
			scratch[j], scratch[j-1] = scratch[j-1], scratch[j]
		}
	}
	n := len(scratch)
	if n%2 == 1 {
		return scratch[n/2]
	}
	return (scratch[n/2-1] + scratch[n/2]) / 2
}

// Master is a foreign master as its announces describe it.
type Master struct {
	Port     protocol.PortIdentity
	Announce protocol.AnnounceBody
	Seen     time.Time
	flags    uint16
}

// Better reports whether master data set a is better than b (IEEE 1588
// 9.3.4, the comparison of two foreign masters' announces): priority1, clock
// class, accuracy, variance, priority2, identity; then fewer steps removed.
func Better(a, b *protocol.AnnounceBody) bool {
	qa, qb := a.GrandmasterClockQuality, b.GrandmasterClockQuality
	return cmp.Or(
		cmp.Compare(a.GrandmasterPriority1, b.GrandmasterPriority1),
		cmp.Compare(qa.ClockClass, qb.ClockClass),
		cmp.Compare(qa.ClockAccuracy, qb.ClockAccuracy),
		cmp.Compare(qa.OffsetScaledLogVariance, qb.OffsetScaledLogVariance),
		cmp.Compare(a.GrandmasterPriority2, b.GrandmasterPriority2),
		cmp.Compare(a.GrandmasterIdentity, b.GrandmasterIdentity),
		cmp.Compare(a.StepsRemoved, b.StepsRemoved),
	) < 0
}

// Flag bits of the header's flagField.
const (
	flagTwoStep      = 0x0200
	flagPTPTimescale = 0x0008
	flagUTCValid     = 0x0004
)

func tsNS(t protocol.Timestamp) int64 {
	return int64(t.Seconds.Seconds())*1_000_000_000 + int64(t.Nanoseconds)
}

func corrNS(c protocol.Correction) int64 { return int64(c) >> 16 }

// Slave is a measurement-only PTP end-to-end slave: it follows the best master
// by its announces, pairs each Sync with its Follow_Up (two-step) or takes the
// Sync's own timestamp (one-step), sends Delay_Req and pairs the Delay_Resp.
// It never adjusts a clock. Its methods take packets and timestamps, so any
// transport (UDP, IEEE 802.3) drives it. Not safe for concurrent use.
//
// One Delay_Req is outstanding at a time. One that is not answered within
// DelayTimeout, or whose transmit timestamp (t3) never came, is abandoned and
// counted (DelayTimeouts, DelayNoT3); the next goes out after the next Sync,
// and a late answer to the abandoned one is refused (RejectLate).
type Slave struct {
	Port            protocol.PortIdentity // ours: the Delay_Req source, matched in Delay_Resp
	Domain          uint8
	AnnounceTimeout time.Duration // a master not heard for this long is forgotten (default 6 s)
	DelayFilter     int           // path delays in the moving median (default DefaultDelayFilterLength, ptp4l's)
	// DelayTimeout is how long a Delay_Req waits for its Delay_Resp; zero
	// derives it from what the master announces in its messages (see
	// DelayTimeoutFor).
	DelayTimeout time.Duration

	// DelayTimeouts counts Delay_Reqs abandoned unanswered; DelayNoT3 those
	// abandoned because their transmit timestamp was not usable.
	DelayTimeouts, DelayNoT3 uint64

	delays  []int64 // the last DelayFilter mean path delays
	scratch []int64
	filt    filter   // the filtered estimate beside ptp4l's
	last    Exchange // the latest delay measurement (T3, T4, CorrDelayNS, DelayNS)
	out     Exchange // the measurement Event and General return a pointer to

	masters       map[protocol.PortIdentity]*Master
	best          *Master
	MasterChanges uint64
	Rejects       [numRejects]uint64

	sync syncState
	// early is a Follow_Up that came before its Sync: over UDP they arrive on
	// two sockets, read by two goroutines, and the order between them is lost.
	early struct {
		valid    bool
		seq      uint16
		from     protocol.PortIdentity
		t1, corr int64
	}
	delay struct {
		pending bool
		seq     uint16
		t3      int64
		sentAt  time.Time // when DelayReq built it (its monotonic reading counts)
		sync    syncState // the Sync this Delay_Req measures with
	}
	// abandoned is the sequence id of the last Delay_Req given up on, so that
	// a late answer to it is told apart from a stray one.
	abandoned struct {
		valid bool
		seq   uint16
	}
	// The master's message intervals (log2 s) from its Syncs'
	// logMessageInterval and its Delay_Resps' (logMinDelayReqInterval);
	// unknown until one arrives.
	logSync, logMinDelayReq   int8
	haveLogSync, haveLogDelay bool
	nextSeq                   uint16

	sm protocol.SyncDelayReq
	fu protocol.FollowUp
	dr protocol.DelayResp
	an protocol.Announce
}

type syncState struct {
	valid, haveT1 bool
	outlier       bool // its t2 − t1 − corrections failed the delay test
	seq           uint16
	from          protocol.PortIdentity
	t1, t2        int64
	corr          int64
}

// Best returns the master being followed.
func (s *Slave) Best() (Master, bool) {
	if s.best == nil {
		return Master{}, false
	}
	return *s.best, true
}

func (s *Slave) count(err error) error {
	if err != nil {
		s.Rejects[RejectOf(err)]++
	}
	return err
}

// Bounds of the default Delay_Req timeout (see DelayTimeoutFor).
const (
	minDelayTimeout   = 3 * time.Second
	delayTimeoutSyncs = 4 // Sync intervals a Delay_Resp may take
	delayTimeoutReqs  = 4 // minimum Delay_Req intervals a Delay_Resp may take
)

// logInterval is 2^log seconds, log clamped to [-16, 8] (IEEE 1588 intervals
// are int8; the clamp keeps a bogus one from overflowing).
func logInterval(log int8) time.Duration {
	log = min(max(log, -16), 8)
	if log >= 0 {
		return time.Second << log
	}
	return time.Second >> -log
}

// DelayTimeoutFor is the default Delay_Req timeout: the longest of
// delayTimeoutSyncs Sync intervals, delayTimeoutReqs minimum Delay_Req
// intervals and minDelayTimeout (3 s), the intervals as the master
// announces them (logMessageInterval of its Syncs and Delay_Resps; have*
// false where none has been seen yet).
func DelayTimeoutFor(logSync int8, haveSync bool, logMinDelayReq int8, haveDelay bool) time.Duration {
	d := minDelayTimeout
	if haveSync {
		d = max(d, delayTimeoutSyncs*logInterval(logSync))
	}
	if haveDelay {
		d = max(d, delayTimeoutReqs*logInterval(logMinDelayReq))
	}
	return d
}

func (s *Slave) delayTimeout() time.Duration {
	if s.DelayTimeout > 0 {
		return s.DelayTimeout
	}
	return DelayTimeoutFor(s.logSync, s.haveLogSync, s.logMinDelayReq, s.haveLogDelay)
}

// abandon gives up on the outstanding Delay_Req.
func (s *Slave) abandon() {
	s.delay.pending = false
	s.abandoned.valid, s.abandoned.seq = true, s.delay.seq
}

// expire abandons (and counts) a Delay_Req left unanswered too long.
func (s *Slave) expire(now time.Time) {
	if s.delay.pending && now.Sub(s.delay.sentAt) > s.delayTimeout() {
		s.DelayTimeouts++
		s.abandon()
	}
}

// logMessageInterval is the header's logMessageInterval; 0x7f means none.
func logMessageInterval(b []byte) (int8, bool) {
	v := int8(b[33])
	return v, v != 0x7f
}

// header checks what every message must pass and returns its type.
func (s *Slave) header(b []byte) (protocol.MessageType, protocol.PortIdentity, uint16, error) {
	var from protocol.PortIdentity
	if len(b) < headerSize {
		return 0, from, 0, rejectf(RejectShort, "%d bytes", len(b))
	}
	if len(b) > MaxMessage {
		return 0, from, 0, rejectf(RejectOversized, "%d bytes", len(b))
	}
	if v := b[1] & 0x0f; v != 2 {
		return 0, from, 0, rejectf(RejectVersion, "PTP version %d", v)
	}
	if b[4] != s.Domain {
		return 0, from, 0, rejectf(RejectDomain, "domain %d, following %d", b[4], s.Domain)
	}
	from.ClockIdentity = protocol.ClockIdentity(binary.BigEndian.Uint64(b[20:]))
	from.PortNumber = binary.BigEndian.Uint16(b[28:])
	return protocol.MessageType(b[0] & 0x0f), from, binary.BigEndian.Uint16(b[30:]), nil
}

// utcOffset is what to subtract from master timestamps to compare them with
// CLOCK_REALTIME: TAI - UTC when the master runs the PTP timescale.
func (s *Slave) utcOffset() int64 {
	if s.best == nil {
		return 0
	}
	if flags := s.best.flags; flags&flagPTPTimescale != 0 && flags&flagUTCValid != 0 {
		return int64(s.best.Announce.CurrentUTCOffset) * 1_000_000_000
	}
	return 0
}

// Event takes a message from the event port (319) with its receive timestamp
// (REALTIME ns, already translated when it came from a PHC) and the time it
// is handled (for timeouts). It reports whether a Delay_Req is due and, for a
// one-step Sync, the measurement it completes (valid until the next call:
// copy it).
func (s *Slave) Event(b []byte, rx int64, now time.Time) (*Exchange, bool, error) {
	s.expire(now)
	typ, from, seq, err := s.header(b)
	if err != nil {
		return nil, false, s.count(err)
	}
	if typ != protocol.MessageSync {
		return nil, false, s.count(rejectf(RejectType, "%v on the event port", typ))
	}
	if s.best == nil || from != s.best.Port {
		return nil, false, s.count(rejectf(RejectMaster, "sync from %v", from))
	}
	if err := s.sm.UnmarshalBinary(b); err != nil {
		return nil, false, s.count(rejectf(RejectMalformed, "%v", err))
	}
	if l, ok := logMessageInterval(b); ok {
		s.logSync, s.haveLogSync = l, true
	}
	s.sync = syncState{valid: true, seq: seq, from: from, t2: rx, corr: corrNS(s.sm.CorrectionField)}
	if s.sm.FlagField&flagTwoStep == 0 {
		s.sync.t1 = tsNS(s.sm.OriginTimestamp) - s.utcOffset()
		s.sync.haveT1 = true
		return s.measure(), !s.delay.pending, nil
	}
	if e := &s.early; e.valid && e.seq == seq && e.from == from {
		e.valid = false
		s.sync.t1, s.sync.haveT1 = e.t1, true
		s.sync.corr += e.corr
		return s.measure(), !s.delay.pending, nil
	}
	return nil, !s.delay.pending, nil
}

// measure returns the measurement of the current Sync, once a path delay is
// known. It points into the slave and is valid until the next call.
//
// It runs once per Sync, when its t1 is known: the Sync's delay test goes
// first, so a Delay_Req measured with this Sync knows whether it was
// flagged.
func (s *Slave) measure() *Exchange {
	if !s.sync.haveT1 {
		return nil
	}
	s.sync.outlier = s.filt.sync(s.sync.t2, s.sync.t2-s.sync.t1-s.sync.corr)
	if d := &s.delay.sync; s.delay.pending && d.seq == s.sync.seq && d.from == s.sync.from {
		d.outlier = s.sync.outlier
	}
	if len(s.delays) == 0 {
		return nil
	}
	s.out = s.last
	e := &s.out
	e.Master, e.Seq, e.T1, e.T2, e.CorrSyncNS = s.sync.from, s.sync.seq, s.sync.t1, s.sync.t2, s.sync.corr
	if cap(s.scratch) < len(s.delays) {
		s.scratch = make([]int64, 0, max(s.DelayFilter, DefaultDelayFilterLength))
	}
	e.PathDelayNS = medianOf(s.delays, s.scratch)
	e.OffsetNS = e.T2 - e.T1 - e.CorrSyncNS - e.PathDelayNS
	e.SyncOutlier = s.sync.outlier
	e.FilteredOffsetNS, e.FilteredPathDelayNS, e.Filtered = s.filt.estimate(e.T2, s.filterLength())
	return e
}

// filterLength is DelayFilter or its default.
func (s *Slave) filterLength() int {
	if s.DelayFilter <= 0 {
		return DefaultDelayFilterLength
	}
	return s.DelayFilter
}

// addDelay puts a mean path delay into the moving median.
func (s *Slave) addDelay(d int64) {
	n := s.filterLength()
	if len(s.delays) == n {
		copy(s.delays, s.delays[1:])
		s.delays = s.delays[:n-1]
	}
	s.delays = append(s.delays, d)
}

// General takes a message from the general port (320). A Delay_Resp that
// completes a measurement returns it.
func (s *Slave) General(b []byte, now time.Time) (*Exchange, error) {
	s.expire(now)
	typ, from, seq, err := s.header(b)
	if err != nil {
		return nil, s.count(err)
	}
	switch typ {
	case protocol.MessageAnnounce:
		if err := s.an.UnmarshalBinary(b); err != nil {
			return nil, s.count(rejectf(RejectMalformed, "%v", err))
		}
		s.announce(from, now)
		return nil, nil
	case protocol.MessageFollowUp:
		if s.best == nil || from != s.best.Port {
			return nil, s.count(rejectf(RejectMaster, "follow_up from %v", from))
		}
		if !s.sync.valid || from != s.sync.from || seq != s.sync.seq || s.sync.haveT1 {
			if s.sync.valid && int16(seq-s.sync.seq) > 0 {
				// Ahead of the last Sync: keep it for its Sync.
				if err := s.fu.UnmarshalBinary(b); err != nil {
					return nil, s.count(rejectf(RejectMalformed, "%v", err))
				}
				s.early.valid, s.early.seq, s.early.from = true, seq, from
				s.early.t1 = tsNS(s.fu.PreciseOriginTimestamp) - s.utcOffset()
				s.early.corr = corrNS(s.fu.CorrectionField)
				return nil, nil
			}
			return nil, s.count(rejectf(RejectSequence, "follow_up %d from %v, sync %d", seq, from, s.sync.seq))
		}
		if err := s.fu.UnmarshalBinary(b); err != nil {
			return nil, s.count(rejectf(RejectMalformed, "%v", err))
		}
		s.sync.t1 = tsNS(s.fu.PreciseOriginTimestamp) - s.utcOffset()
		s.sync.corr += corrNS(s.fu.CorrectionField)
		s.sync.haveT1 = true
		if s.delay.pending && s.delay.sync.seq == seq && s.delay.sync.from == from {
			s.delay.sync = s.sync
		}
		return s.measure(), nil
	case protocol.MessageDelayResp:
		if err := s.dr.UnmarshalBinary(b); err != nil {
			return nil, s.count(rejectf(RejectMalformed, "%v", err))
		}
		if s.dr.RequestingPortIdentity != s.Port {
			return nil, s.count(rejectf(RejectForeign, "delay_resp for %v", s.dr.RequestingPortIdentity))
		}
		if s.best != nil && from == s.best.Port {
			if l, ok := logMessageInterval(b); ok {
				s.logMinDelayReq, s.haveLogDelay = l, true
			}
		}
		if !s.delay.pending || seq != s.delay.seq || s.delay.t3 == 0 {
			if s.abandoned.valid && seq == s.abandoned.seq {
				return nil, s.count(rejectf(RejectLate, "delay_resp %d after its delay_req was abandoned", seq))
			}
			return nil, s.count(rejectf(RejectSequence, "delay_resp %d, pending %d", seq, s.delay.seq))
		}
		s.delay.pending = false
		if !s.delay.sync.haveT1 {
			return nil, s.count(rejectf(RejectSequence, "sync %d never got its follow_up", s.delay.sync.seq))
		}
		ds := s.delay.sync
		t4 := tsNS(s.dr.ReceiveTimestamp) - s.utcOffset()
		last := Exchange{T3: s.delay.t3, T4: t4, CorrDelayNS: corrNS(s.dr.CorrectionField)}
		last.DelayNS = MeanPathDelay(ds.t1, ds.t2, s.delay.t3, t4, ds.corr, last.CorrDelayNS)
		if last.DelayNS < 0 {
			// Refused, and not kept either: the next Exchange's T3 and T4
			// are still those of the latest delay in the filter.
			return nil, s.count(rejectf(RejectSequence, "negative path delay %d ns", last.DelayNS))
		}
		last.DelayOutlier = s.filt.delay(last.DelayNS, ds.outlier, s.filterLength())
		s.last = last
		s.addDelay(last.DelayNS)
		return nil, nil
	}
	return nil, s.count(rejectf(RejectType, "%v on the general port", typ))
}

// announce records a master and re-runs the comparison.
func (s *Slave) announce(from protocol.PortIdentity, now time.Time) {
	if s.masters == nil {
		s.masters = map[protocol.PortIdentity]*Master{}
	}
	m := s.masters[from]
	if m == nil {
		m = &Master{Port: from}
		s.masters[from] = m
	}
	m.Announce, m.Seen, m.flags = s.an.AnnounceBody, now, s.an.FlagField
	timeout := s.AnnounceTimeout
	if timeout <= 0 {
		timeout = 6 * time.Second
	}
	var best *Master
	for id, c := range s.masters {
		if now.Sub(c.Seen) > timeout {
			delete(s.masters, id)
			continue
		}
		if best == nil || Better(&c.Announce, &best.Announce) {
			best = c
		}
	}
	if best != s.best {
		if s.best != nil || best != nil {
			s.MasterChanges++
		}
		s.best = best
		s.sync = syncState{}
		s.delay.pending = false
		s.delays = s.delays[:0] // path delays to another master do not apply
		s.filt.reset()
	}
}

// DelayReq writes the next Delay_Req into buf and returns it; now is when it
// is sent (its timeout runs from there). Call Sent with its transmit timestamp
// once it is out, or Unsent if it could not be sent.
func (s *Slave) DelayReq(buf []byte, now time.Time) ([]byte, error) {
	if !s.sync.valid {
		return nil, errors.New("ptp: no sync to measure against")
	}
	s.nextSeq++
	req := protocol.SyncDelayReq{Header: protocol.Header{
		SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(protocol.MessageDelayReq, 0),
		Version:            protocol.Version,
		MessageLength:      headerSize + 10,
		DomainNumber:       s.Domain,
		SourcePortIdentity: s.Port,
		SequenceID:         s.nextSeq,
		ControlField:       1,
		LogMessageInterval: 0x7f,
	}}
	n, err := req.MarshalBinaryTo(buf)
	if err != nil {
		return nil, err
	}
	s.delay.pending, s.delay.seq, s.delay.t3, s.delay.sentAt, s.delay.sync = true, s.nextSeq, 0, now, s.sync
	return buf[:n], nil
}

// Sent records the Delay_Req's transmit timestamp (REALTIME ns). Zero means
// there is none (e.g. a hardware stamp that could not be translated): the
// Delay_Req is abandoned at once and counted in DelayNoT3, so the next one
// goes out after the next Sync.
func (s *Slave) Sent(t3 int64) {
	if !s.delay.pending {
		return
	}
	if t3 == 0 {
		s.DelayNoT3++
		s.abandon()
		return
	}
	s.delay.t3 = t3
}

// Unsent abandons the Delay_Req DelayReq built when it could not be sent (the
// transport counts the failure).
func (s *Slave) Unsent() {
	if s.delay.pending {
		s.abandon()
	}
}
