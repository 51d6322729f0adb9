package ptp

import (
	"slices"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

var (
	gm    = protocol.PortIdentity{ClockIdentity: 0x0a0b0cfffe0d0e0f, PortNumber: 1}
	other = protocol.PortIdentity{ClockIdentity: 0x1111fffe222222, PortNumber: 1}
	us    = protocol.PortIdentity{ClockIdentity: 0x020304fffe050607, PortNumber: 1}
)

func ptpTS(ns int64) protocol.Timestamp {
	var t protocol.Timestamp
	sec := uint64(ns / 1e9)
	for i := 5; i >= 0; i-- {
		t.Seconds[i] = byte(sec)
		sec >>= 8
	}
	t.Nanoseconds = uint32(ns % 1e9)
	return t
}

func header(typ protocol.MessageType, from protocol.PortIdentity, seq uint16, length uint16) protocol.Header {
	return protocol.Header{SdoIDAndMsgType: protocol.NewSdoIDAndMsgType(typ, 0), Version: protocol.Version, MessageLength: length,
		SourcePortIdentity: from, SequenceID: seq}
}

func announce(from protocol.PortIdentity, prio1 uint8) []byte {
	a := protocol.Announce{Header: header(protocol.MessageAnnounce, from, 1, 64), AnnounceBody: protocol.AnnounceBody{
		GrandmasterPriority1: prio1, GrandmasterPriority2: 128, GrandmasterIdentity: from.ClockIdentity,
		GrandmasterClockQuality: protocol.ClockQuality{ClockClass: 248, ClockAccuracy: 0xfe, OffsetScaledLogVariance: 0xffff}}}
	b, err := a.MarshalBinary()
	if err != nil {
		panic(err)
	}
	return b
}

func syncMsg(from protocol.PortIdentity, seq uint16, twoStep bool, t1 int64, corr int64) []byte {
	s := protocol.SyncDelayReq{Header: header(protocol.MessageSync, from, seq, 44)}
	s.CorrectionField = protocol.Correction(corr << 16)
	if twoStep {
		s.FlagField = flagTwoStep
	} else {
		s.OriginTimestamp = ptpTS(t1)
	}
	b, _ := s.MarshalBinary()
	return b
}

func followUp(from protocol.PortIdentity, seq uint16, t1, corr int64) []byte {
	f := protocol.FollowUp{Header: header(protocol.MessageFollowUp, from, seq, 44), FollowUpBody: protocol.FollowUpBody{PreciseOriginTimestamp: ptpTS(t1)}}
	f.CorrectionField = protocol.Correction(corr << 16)
	b, _ := f.MarshalBinary()
	return b
}

func delayResp(from protocol.PortIdentity, seq uint16, to protocol.PortIdentity, t4, corr int64) []byte {
	d := protocol.DelayResp{Header: header(protocol.MessageDelayResp, from, seq, 54), DelayRespBody: protocol.DelayRespBody{ReceiveTimestamp: ptpTS(t4), RequestingPortIdentity: to}}
	d.CorrectionField = protocol.Correction(corr << 16)
	b, _ := d.MarshalBinary()
	return b
}

func TestMeanPathDelayAndMedian(t *testing.T) {
	// Our clock 2500 ns ahead; 10 us path each way; corrections 300 and 200 ns.
	if d := MeanPathDelay(1000, 1000+10_000+300+2500, 50_000, 50_000+10_000+200-2500, 300, 200); d != 10_000 {
		t.Fatalf("mean path delay %d", d)
	}
	if m := medianOf([]int64{9, 1, 5}, nil); m != 5 {
		t.Fatalf("median %d", m)
	}
	if m := medianOf([]int64{4, 1, 3, 100}, nil); m != 3 {
		t.Fatalf("even median %d", m)
	}
	s := &Slave{DelayFilter: 3}
	for _, d := range []int64{1, 2, 3, 1000} {
		s.addDelay(d)
	}
	if len(s.delays) != 3 || s.delays[0] != 2 {
		t.Fatalf("filter window %v", s.delays)
	}
}

func TestSlaveTwoStepExchange(t *testing.T) {
	s := &Slave{Port: us}
	now := time.Unix(1_795_000_000, 0)
	if _, _, err := s.Event(syncMsg(gm, 1, true, 0, 0), 1, now); RejectOf(err) != RejectMaster {
		t.Fatalf("sync before any announce: %v", err)
	}
	s.General(announce(gm, 128), now)
	base := int64(1_795_000_000_000_000_000)
	_, send, err := s.Event(syncMsg(gm, 7, true, 0, 100), base+12_000, now) // t2
	if err != nil || !send {
		t.Fatalf("sync: %v %v", send, err)
	}
	req, err := s.DelayReq(make([]byte, 64), now)
	if err != nil || len(req) != 44 || protocol.MessageType(req[0]&0xf) != protocol.MessageDelayReq {
		t.Fatalf("delay_req %x %v", req, err)
	}
	s.Sent(base + 100_000) // t3
	if ex, err := s.General(followUp(gm, 7, base, 50), now); err != nil || ex != nil {
		t.Fatalf("follow_up: %v %v", ex, err)
	}
	if _, err := s.General(delayResp(gm, 1, other, base+111_000, 0), now); RejectOf(err) != RejectForeign {
		t.Fatalf("delay_resp for another port: %v", err)
	}
	if _, err := s.General(delayResp(gm, 9, us, base+111_000, 0), now); RejectOf(err) != RejectSequence {
		t.Fatalf("delay_resp with another sequence: %v", err)
	}
	if ex, err := s.General(delayResp(gm, 1, us, base+111_000, 0), now); err != nil || ex != nil { // t4
		t.Fatalf("delay_resp: %v %v", ex, err)
	}
	// ms = 12000 - 150 = 11850, sm = 11000: path delay 11425. The next Sync
	// (same paths) measures offset 11850 - 11425 = 425.
	if ex, _, _ := s.Event(syncMsg(gm, 8, true, 0, 100), base+1e9+12_000, now); ex != nil {
		t.Fatalf("a two-step sync measured before its follow_up: %+v", ex)
	}
	ex, err := s.General(followUp(gm, 8, base+1e9, 50), now)
	if err != nil || ex == nil {
		t.Fatalf("follow_up: %v %v", ex, err)
	}
	if ex.OffsetNS != 425 || ex.PathDelayNS != 11425 || ex.DelayNS != 11425 || ex.Seq != 8 || ex.Master != gm || ex.T3 != base+100_000 {
		t.Fatalf("exchange %+v", ex)
	}
	// Over UDP the Follow_Up may be read before its Sync (two sockets, two
	// readers): it is kept and completes the Sync when that comes.
	if ex, err := s.General(followUp(gm, 9, base+2e9, 50), now); err != nil || ex != nil {
		t.Fatalf("early follow_up: %v %v", ex, err)
	}
	ex, _, err = s.Event(syncMsg(gm, 9, true, 0, 100), base+2e9+12_000, now)
	if err != nil || ex == nil || ex.OffsetNS != 425 || ex.Seq != 9 {
		t.Fatalf("sync after its follow_up: %+v %v", ex, err)
	}
	// A stale one (behind the last Sync) is refused, and one from another
	// clock is not the master's.
	if _, err := s.General(followUp(gm, 5, base, 50), now); RejectOf(err) != RejectSequence {
		t.Fatalf("stale follow_up: %v", err)
	}
	if _, err := s.General(followUp(other, 10, base, 50), now); RejectOf(err) != RejectMaster {
		t.Fatalf("follow_up from another clock: %v", err)
	}
}

// A negative path delay is refused and leaves no trace: the next Exchange
// still shows the latest delay in the filter (its T3, T4 and DelayNS).
func TestSlaveNegativeDelayKept(t *testing.T) {
	s := &Slave{Port: us}
	now := time.Unix(1_795_000_000, 0)
	s.General(announce(gm, 128), now)
	s.Event(syncMsg(gm, 3, false, 5_000, 0), 15_000, now)
	s.DelayReq(make([]byte, 64), now)
	s.Sent(20_000)
	if _, err := s.General(delayResp(gm, 1, us, 30_000, 0), now); err != nil {
		t.Fatal(err)
	}
	// ms = 5000 - 20000: a path delay of (10000 - 15000) / 2 < 0.
	s.Event(syncMsg(gm, 4, false, 1e9+5_000, 0), 1e9+15_000, now)
	s.DelayReq(make([]byte, 64), now)
	s.Sent(1e9 + 20_000)
	if _, err := s.General(delayResp(gm, 2, us, 1e9+5_000, 0), now); RejectOf(err) != RejectSequence {
		t.Fatalf("negative path delay: %v", err)
	}
	ex, _, err := s.Event(syncMsg(gm, 5, false, 2e9+5_000, 0), 2e9+15_000, now)
	if err != nil || ex == nil || ex.T3 != 20_000 || ex.T4 != 30_000 || ex.DelayNS != 10_000 || ex.PathDelayNS != 10_000 || len(s.delays) != 1 {
		t.Fatalf("after a refused delay: %+v %v, filter %v", ex, err, s.delays)
	}
}

func TestSlaveOneStepAndRejects(t *testing.T) {
	s := &Slave{Port: us, Domain: 0}
	now := time.Unix(1_795_000_000, 0)
	s.General(announce(gm, 128), now)
	if _, send, err := s.Event(syncMsg(gm, 3, false, 5_000, 0), 15_000, now); err != nil || !send {
		t.Fatalf("one-step sync: %v", err)
	}
	s.DelayReq(make([]byte, 64), now)
	s.Sent(20_000)
	if _, err := s.General(delayResp(gm, 1, us, 30_000, 0), now); err != nil {
		t.Fatal(err)
	}
	ex, _, err := s.Event(syncMsg(gm, 4, false, 1e9+5_000, 0), 1e9+15_000, now)
	if err != nil || ex == nil || ex.OffsetNS != 0 || ex.PathDelayNS != 10_000 {
		t.Fatalf("one-step exchange %+v %v", ex, err)
	}
	bad := syncMsg(gm, 4, false, 1, 0)
	bad[1] = 1 // PTPv1
	if _, _, err := s.Event(bad, 1, now); RejectOf(err) != RejectVersion {
		t.Fatalf("v1: %v", err)
	}
	dom := syncMsg(gm, 4, false, 1, 0)
	dom[4] = 24
	if _, _, err := s.Event(dom, 1, now); RejectOf(err) != RejectDomain {
		t.Fatalf("domain: %v", err)
	}
	if _, _, err := s.Event(syncMsg(gm, 4, false, 1, 0)[:20], 1, now); RejectOf(err) != RejectShort {
		t.Fatalf("short: %v", err)
	}
	if _, _, err := s.Event(make([]byte, MaxMessage+1), 1, now); RejectOf(err) != RejectOversized {
		t.Fatalf("oversized: %v", err)
	}
	if s.Rejects[RejectVersion] != 1 || s.Rejects[RejectDomain] != 1 {
		t.Fatalf("reject counters %v", s.Rejects)
	}
}

func TestSlaveFollowsTheBestMaster(t *testing.T) {
	s := &Slave{Port: us}
	now := time.Unix(1_795_000_000, 0)
	s.General(announce(other, 200), now)
	if b, _ := s.Best(); b.Port != other {
		t.Fatalf("best %v", b.Port)
	}
	s.General(announce(gm, 100), now.Add(time.Second))
	if b, _ := s.Best(); b.Port != gm || s.MasterChanges != 2 {
		t.Fatalf("best %v after a better announce, changes %d", b.Port, s.MasterChanges)
	}
	if _, _, err := s.Event(syncMsg(other, 1, false, 1, 0), 2, now); RejectOf(err) != RejectMaster {
		t.Fatalf("sync from the worse master: %v", err)
	}
	// gm goes silent: after the announce timeout the other master takes over.
	s.General(announce(other, 200), now.Add(10*time.Second))
	if b, _ := s.Best(); b.Port != other || s.MasterChanges != 3 {
		t.Fatalf("best %v after gm went silent", b.Port)
	}
}

func TestBetter(t *testing.T) {
	a := protocol.AnnounceBody{GrandmasterPriority1: 128, GrandmasterPriority2: 128, GrandmasterIdentity: 1}
	b := a
	b.GrandmasterIdentity = 2
	if !Better(&a, &b) || Better(&b, &a) {
		t.Fatal("identity tie-break")
	}
	b.GrandmasterPriority1 = 127
	if Better(&a, &b) {
		t.Fatal("priority1 first")
	}
	c := a
	c.GrandmasterClockQuality.ClockClass = 6
	a.GrandmasterClockQuality.ClockClass = 248
	if !Better(&c, &a) {
		t.Fatal("clock class")
	}
}

func FuzzSlave(f *testing.F) {
	f.Add(announce(gm, 128), syncMsg(gm, 1, true, 0, 0), followUp(gm, 1, 5, 0), delayResp(gm, 1, us, 9, 0))
	f.Fuzz(func(t *testing.T, a, s1, fu, dr []byte) {
		sl := &Slave{Port: us}
		now := time.Unix(1, 0)
		sl.General(a, now)
		if _, send, _ := sl.Event(s1, 100, now); send {
			sl.DelayReq(make([]byte, 64), now)
			sl.Sent(200)
		}
		sl.General(fu, now)
		sl.General(dr, now)
		ex, _, err := sl.Event(s1, 1_000_000_100, now)
		if ex == nil && err == nil {
			ex, err = sl.General(fu, now)
		}
		if err == nil && ex != nil && ex.OffsetNS != ex.T2-ex.T1-ex.CorrSyncNS-ex.PathDelayNS {
			t.Fatalf("exchange %+v", ex)
		}
	})
}

// master1Hz drives a slave as a two-step master at 1 Hz would: at each second
// a Sync, its Follow_Up, and the answer to a Delay_Req sent 200 ms after the
// Sync, unless answer says to drop it. It returns the sequence ids of the
// Delay_Reqs sent and the exchanges measured (by the Sync's second).
type master1Hz struct {
	t          *testing.T
	s          *Slave
	start      time.Time
	base       int64
	reqs       []int         // the seconds at which a Delay_Req went out
	t3         map[int]int64 // their t3 by second
	measured   map[int]Exchange
	lastReqSeq uint16
}

func newMaster1Hz(t *testing.T, s *Slave) *master1Hz {
	m := &master1Hz{t: t, s: s, start: time.Unix(1_795_000_000, 0), base: 1_795_000_000_000_000_000, t3: map[int]int64{}, measured: map[int]Exchange{}}
	s.General(announce(gm, 128), m.start)
	return m
}

// second runs second i; answer reports whether the master answers its
// Delay_Req, and t3 is the transmit timestamp the transport reports (0: none).
func (m *master1Hz) second(i int, answer bool, noT3 bool) {
	now := m.start.Add(time.Duration(i) * time.Second)
	t1 := m.base + int64(i)*1e9
	if i%5 == 0 {
		m.s.General(announce(gm, 128), now)
	}
	_, send, err := m.s.Event(syncMsg(gm, uint16(i), true, 0, 0), t1+12_000, now)
	if err != nil {
		m.t.Fatalf("sync %d: %v", i, err)
	}
	ex, err := m.s.General(followUp(gm, uint16(i), t1, 0), now.Add(time.Millisecond))
	if err != nil {
		m.t.Fatalf("follow_up %d: %v", i, err)
	}
	if ex != nil {
		m.measured[i] = *ex
	}
	if !send {
		return
	}
	req, err := m.s.DelayReq(make([]byte, 64), now.Add(200*time.Millisecond))
	if err != nil {
		m.t.Fatalf("delay_req %d: %v", i, err)
	}
	m.reqs = append(m.reqs, i)
	m.lastReqSeq = uint16(req[30])<<8 | uint16(req[31])
	t3 := t1 + 200_000_000
	if noT3 {
		t3 = 0
	}
	m.s.Sent(t3)
	m.t3[i] = t3
	if answer {
		if _, err := m.s.General(delayResp(gm, m.lastReqSeq, us, t3+11_000-12_000, 0), now.Add(300*time.Millisecond)); err != nil && !noT3 {
			m.t.Fatalf("delay_resp %d: %v", i, err)
		}
	}
}

// TestSlaveRecoversFromALostDelayResp: one Delay_Resp never comes. The
// Delay_Req is abandoned after the timeout the master's intervals give,
// counted once, and Delay_Reqs go out again at the next Sync; a late answer
// to the abandoned one is refused as late, not used.
func TestSlaveRecoversFromALostDelayResp(t *testing.T) {
	s := &Slave{Port: us}
	m := newMaster1Hz(t, s)
	const drop, seconds = 3, 20
	timeout := DelayTimeoutFor(0, true, 0, true) // the test master's intervals: 1 s
	resume := drop + 1
	for time.Duration(resume)*time.Second-(time.Duration(drop)*time.Second+200*time.Millisecond) <= timeout {
		resume++
	}
	var droppedSeq uint16
	for i := 0; i < seconds; i++ {
		m.second(i, i != drop, false)
		if i == drop {
			droppedSeq = m.lastReqSeq
		}
		if i == resume+1 { // the lost answer turns up, far too late
			now := m.start.Add(time.Duration(i)*time.Second + 500*time.Millisecond)
			if _, err := s.General(delayResp(gm, droppedSeq, us, m.t3[drop]-1_000, 0), now); RejectOf(err) != RejectLate {
				t.Fatalf("a late answer to the abandoned delay_req: %v", err)
			}
		}
	}
	want := []int{}
	for i := 0; i < seconds; i++ {
		if i <= drop || i >= resume {
			want = append(want, i)
		}
	}
	if !slices.Equal(m.reqs, want) {
		t.Fatalf("delay_reqs at seconds %v, want %v (timeout %v)", m.reqs, want, timeout)
	}
	if s.DelayTimeouts != 1 || s.DelayNoT3 != 0 || s.Rejects[RejectLate] != 1 {
		t.Fatalf("timeouts %d, no t3 %d, late %d; want 1, 0, 1", s.DelayTimeouts, s.DelayNoT3, s.Rejects[RejectLate])
	}
	// Every Sync after the first answered Delay_Req is measured, and from
	// resume on with the newest path delay: T3 of the previous second.
	for i := 1; i < seconds; i++ {
		ex, ok := m.measured[i]
		if !ok {
			t.Fatalf("sync %d not measured", i)
		}
		if i > resume && ex.T3 != m.t3[i-1] {
			t.Fatalf("sync %d measured with t3 %d, want the previous second's %d", i, ex.T3, m.t3[i-1])
		}
	}
}

// TestSlaveAbandonsADelayReqWithoutT3: a Delay_Req whose transmit timestamp
// could not be had is abandoned at once and counted; the next Sync sends the
// next one, and the answer to the abandoned one is refused as late.
func TestSlaveAbandonsADelayReqWithoutT3(t *testing.T) {
	s := &Slave{Port: us}
	m := newMaster1Hz(t, s)
	for i := 0; i < 4; i++ {
		m.second(i, true, i == 1)
	}
	if !slices.Equal(m.reqs, []int{0, 1, 2, 3}) {
		t.Fatalf("delay_reqs at seconds %v, want one every second", m.reqs)
	}
	if s.DelayNoT3 != 1 || s.DelayTimeouts != 0 || s.Rejects[RejectLate] != 1 {
		t.Fatalf("no t3 %d, timeouts %d, late %d; want 1, 0, 1", s.DelayNoT3, s.DelayTimeouts, s.Rejects[RejectLate])
	}
	// Unsent (the transport could not send it) abandons it too, uncounted
	// here: the transport counts its send errors.
	now := m.start.Add(10 * time.Second)
	s.Event(syncMsg(gm, 10, true, 0, 0), m.base+10e9, now)
	s.DelayReq(make([]byte, 64), now)
	s.Unsent()
	if _, send, _ := s.Event(syncMsg(gm, 11, true, 0, 0), m.base+11e9, now.Add(time.Second)); !send {
		t.Fatal("no delay_req due after an unsent one")
	}
}

// TestDelayTimeoutFor: the default follows the master's intervals and never
// falls below its floor.
func TestDelayTimeoutFor(t *testing.T) {
	for _, tc := range []struct {
		logSync, logDelay   int8
		haveSync, haveDelay bool
		want                time.Duration
	}{
		{0, 0, false, false, minDelayTimeout},
		{-4, -4, true, true, minDelayTimeout},
		{0, 0, true, false, max(minDelayTimeout, delayTimeoutSyncs*time.Second)},
		{1, 0, true, true, max(minDelayTimeout, delayTimeoutSyncs*2*time.Second)},
		{0, 3, true, true, max(minDelayTimeout, delayTimeoutReqs*8*time.Second)},
		{0, 3, true, false, max(minDelayTimeout, delayTimeoutSyncs*time.Second)},
		{127, -128, true, true, delayTimeoutSyncs * 256 * time.Second}, // clamped
	} {
		if got := DelayTimeoutFor(tc.logSync, tc.haveSync, tc.logDelay, tc.haveDelay); got != tc.want {
			t.Errorf("DelayTimeoutFor(%d, %v, %d, %v) = %v, want %v", tc.logSync, tc.haveSync, tc.logDelay, tc.haveDelay, got, tc.want)
		}
	}
}
