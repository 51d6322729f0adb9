package ptp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/facebook/time/ptp/protocol"
)

// The TLVs ptp4l's slave event monitor sends (linuxptp tlv.h): one per
// Sync it uses and one per Delay_Resp it uses, while its port is
// UNCALIBRATED or SLAVE (Syncs) or follows a master (Delay_Resps).
const (
	TLVSlaveRxSyncTimingData  protocol.TLVType = 0x8004 // IEEE 1588-2019 16.11.4.1
	TLVSlaveDelayTimingDataNP protocol.TLVType = 0x7F00 // linuxptp's own; 0x7F00 in 3.1 and 4.x
)

// Sizes on the wire: the signaling message's head (common header and
// targetPortIdentity), a TLV's sourcePortIdentity, and one record of each.
const (
	signalingHeadSize = 44
	slaveSyncRecord   = 34 // sequenceId, syncOriginTimestamp, totalCorrectionField, scaledCumulativeRateOffset, syncEventIngressTimestamp
	slaveDelayRecord  = 30 // sequenceId, delayOriginTimestamp, totalCorrectionField, delayResponseTimestamp
)

// SlaveTimingKind tells a Sync's timing from a Delay_Req's.
type SlaveTimingKind uint8

// The kinds of SlaveTiming.
const (
	SlaveSync  SlaveTimingKind = iota + 1 // SLAVE_RX_SYNC_TIMING_DATA
	SlaveDelay                            // SLAVE_DELAY_TIMING_DATA_NP
)

func (k SlaveTimingKind) String() string {
	switch k {
	case SlaveSync:
		return "sync"
	case SlaveDelay:
		return "delay"
	}
	return fmt.Sprintf("SlaveTimingKind(%d)", uint8(k))
}

// SlaveTiming is one record of ptp4l's slave event monitor: the timestamps
// of one Sync (t1, t2) or one Delay_Req (t3, t4) exactly as ptp4l used them,
// in ns of the clocks that took them (ptp4l's: CLOCK_REALTIME with software
// timestamping, its PHC with hardware timestamping; the master's for t1 and
// t4).
type SlaveTiming struct {
	Kind   SlaveTimingKind
	Master protocol.PortIdentity // the port whose messages these are (ptp4l's parent)
	Seq    uint16
	// TxNS is t1 (Sync: the master's origin timestamp) or t3 (Delay_Req:
	// ptp4l's transmit timestamp).
	TxNS int64
	// RxNS is t2 (Sync: ptp4l's ingress timestamp) or t4 (Delay_Req: the
	// master's receive timestamp, from the Delay_Resp).
	RxNS int64
	// CorrectionNS is totalCorrectionField in ns, truncated as ptp4l does
	// (scaled ns >> 16): Sync plus Follow_Up corrections, or the Delay_Resp's.
	CorrectionNS int64
	// ScaledCumulativeRateOffset is the Sync's (linuxptp sends 0).
	ScaledCumulativeRateOffset int32
}

// ErrNotSlaveEvent is a datagram that is not a signaling message (what
// ptp4l's slave event monitor sends).
var ErrNotSlaveEvent = errors.New("not a PTP signaling message")

// DecodeSlaveEvents appends the records of one datagram ptp4l's slave event
// monitor sent (a signaling message carrying SLAVE_RX_SYNC_TIMING_DATA or
// SLAVE_DELAY_TIMING_DATA_NP TLVs, each with one or more records) to out and
// returns it. Other TLVs are skipped; unknown returns how many. It does not
// allocate when out has room.
func DecodeSlaveEvents(msg []byte, out []SlaveTiming) (_ []SlaveTiming, unknown int, err error) {
	if len(msg) < signalingHeadSize {
		return out, 0, fmt.Errorf("%w: %d bytes", ErrShortTLV, len(msg))
	}
	if mt := protocol.MessageType(msg[0] & 0x0f); mt != protocol.MessageSignaling {
		return out, 0, fmt.Errorf("%w: message type %v", ErrNotSlaveEvent, mt)
	}
	be := binary.BigEndian
	n := int(be.Uint16(msg[2:]))
	if n < signalingHeadSize || n > len(msg) {
		return out, 0, fmt.Errorf("%w: messageLength %d, %d bytes", ErrShortTLV, n, len(msg))
	}
	b := msg[signalingHeadSize:n]
	for len(b) > 0 {
		if len(b) < 4 {
			return out, unknown, fmt.Errorf("%w: %d bytes after the last TLV", ErrShortTLV, len(b))
		}
		typ, l := protocol.TLVType(be.Uint16(b)), int(be.Uint16(b[2:]))
		if 4+l > len(b) {
			return out, unknown, fmt.Errorf("%w: TLV 0x%04x length %d, %d bytes", ErrShortTLV, uint16(typ), l, len(b)-4)
		}
		v := b[4 : 4+l]
		b = b[4+l:]
		var size int
		switch typ {
		case TLVSlaveRxSyncTimingData:
			size = slaveSyncRecord
		case TLVSlaveDelayTimingDataNP:
			size = slaveDelayRecord
		default:
			unknown++
			continue
		}
		if l < 10 || (l-10)%size != 0 {
			return out, unknown, fmt.Errorf("slave event TLV 0x%04x: length %d is not 10 + n×%d", uint16(typ), l, size)
		}
		master := protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(be.Uint64(v)), PortNumber: be.Uint16(v[8:])}
		for r := v[10:]; len(r) > 0; r = r[size:] {
			st := SlaveTiming{Master: master, Seq: be.Uint16(r)}
			var t1, t2 int64
			var ok1, ok2 bool
			if typ == TLVSlaveRxSyncTimingData {
				st.Kind = SlaveSync
				t1, ok1 = timestampNS(r[2:])
				st.CorrectionNS = int64(be.Uint64(r[12:])) >> 16
				st.ScaledCumulativeRateOffset = int32(be.Uint32(r[20:]))
				t2, ok2 = timestampNS(r[24:])
			} else {
				st.Kind = SlaveDelay
				t1, ok1 = timestampNS(r[2:])
				st.CorrectionNS = int64(be.Uint64(r[12:])) >> 16
				t2, ok2 = timestampNS(r[20:])
			}
			if !ok1 || !ok2 {
				return out, unknown, fmt.Errorf("slave event %v seq %d: timestamp out of range", st.Kind, st.Seq)
			}
			st.TxNS, st.RxNS = t1, t2
			out = append(out, st)
		}
	}
	return out, unknown, nil
}

// timestampNS is a PTP Timestamp (48-bit seconds, 32-bit ns) in int64 ns;
// false when it does not fit or its ns are not below a second.
func timestampNS(b []byte) (int64, bool) {
	sec := uint64(binary.BigEndian.Uint16(b))<<32 | uint64(binary.BigEndian.Uint32(b[2:]))
	ns := binary.BigEndian.Uint32(b[6:])
	if ns >= 1e9 || sec > (math.MaxInt64-999_999_999)/1_000_000_000 {
		return 0, false
	}
	return int64(sec)*1e9 + int64(ns), true
}

// DefaultDelayFilterLength is ptp4l's delay_filter_length.
const DefaultDelayFilterLength = 10

// MaxDelayFilterLength bounds Offsets' filter (ptp4l accepts up to 2^31).
const MaxDelayFilterLength = 1024

// Offsets computes what ptp4l computes from the slave event monitor's
// records, as linuxptp's tsproc does with its defaults (tsproc_mode filter,
// delay_filter moving_median): every Delay_Resp gives a raw delay
// ((t2 − t3) + (t4 − c3 − t1 − c1)) / 2 from the latest Sync (t1 with its
// corrections c1), the filtered delay is the moving median of the last
// length raw delays (two middle values averaged, truncated), and every Sync
// gives offset = t2 − t1 − c1 − filtered delay. A new master starts it over
// (ptp4l resets its tsproc when the best master changes). It is a rate ratio
// of 1 (ptp4l's with free_running, or before its servo estimates one).
type Offsets struct {
	samples []int64
	order   []int // indices of samples in ascending order of value
	cnt     int
	index   int

	master    protocol.PortIdentity
	t1c, t2   int64
	haveSync  bool
	delay     int64
	haveDelay bool
}

// NewOffsets returns an Offsets with a delay filter of length (1 to
// MaxDelayFilterLength; others are DefaultDelayFilterLength).
func NewOffsets(length int) *Offsets {
	if length < 1 || length > MaxDelayFilterLength {
		length = DefaultDelayFilterLength
	}
	return &Offsets{samples: make([]int64, length), order: make([]int, length)}
}

func (o *Offsets) follow(master protocol.PortIdentity) {
	if master == o.master {
		return
	}
	o.master = master
	o.cnt, o.index = 0, 0
	o.haveSync, o.haveDelay = false, false
}

// Sync takes a Sync's record and returns ptp4l's offset for it and the
// filtered delay it used; false before the first delay.
func (o *Offsets) Sync(s *SlaveTiming) (offsetNS, delayNS int64, ok bool) {
	o.follow(s.Master)
	o.t1c, o.t2, o.haveSync = s.TxNS+s.CorrectionNS, s.RxNS, true
	if !o.haveDelay {
		return 0, 0, false
	}
	return o.t2 - o.t1c - o.delay, o.delay, true
}

// Delay takes a Delay_Req's record and returns the raw delay and the
// filtered one; false before the first Sync (ptp4l then has none either).
func (o *Offsets) Delay(d *SlaveTiming) (rawNS, filteredNS int64, ok bool) {
	o.follow(d.Master)
	if !o.haveSync {
		return 0, 0, false
	}
	raw := ((o.t2 - d.TxNS) + (d.RxNS - d.CorrectionNS - o.t1c)) / 2
	o.delay, o.haveDelay = o.median(raw), true
	return raw, o.delay, true
}

// median is linuxptp's mmedian_sample.
func (o *Offsets) median(v int64) int64 {
	l := len(o.samples)
	o.samples[o.index] = v
	i := 0
	if o.cnt < l {
		o.cnt++
	} else {
		for i = 0; i < o.cnt; i++ { // drop the replaced value's index
			if o.order[i] == o.index {
				break
			}
		}
		for ; i+1 < o.cnt; i++ {
			o.order[i] = o.order[i+1]
		}
	}
	for i = o.cnt - 1; i > 0; i-- {
		if o.samples[o.order[i-1]] <= v {
			break
		}
		o.order[i] = o.order[i-1]
	}
	o.order[i] = o.index
	o.index = (o.index + 1) % l
	if o.cnt%2 == 1 {
		return o.samples[o.order[o.cnt/2]]
	}
	return (o.samples[o.order[o.cnt/2-1]] + o.samples[o.order[o.cnt/2]]) / 2
}
