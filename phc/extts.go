package phc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/monagent/monagent/timebase"
)

// ExttsEventSize is the size of struct ptp_extts_event: ptp_clock_time t
// {s64 sec, u32 nsec, u32 reserved}, u32 index, u32 flags, u32 rsv[2].
const ExttsEventSize = 32

// Kernel limits of the extts queue (drivers/ptp/ptp_private.h).
const (
	KernelExttsQueue   = 128 // PTP_MAX_TIMESTAMPS: slots of one queue (127 can wait)
	KernelExttsPerRead = 30  // PTP_BUF_TIMESTAMPS: most events one read returns
)

// NoPin in ExttsChannel.Pin leaves the clock's programmable pins alone: for
// drivers whose extts inputs are fixed (the AM335x CPTS hardware timestamp
// push inputs) or whose pins are set up by someone else.
const NoPin = -1

// Edge selects or reports the edges of an extts input; its values are the
// uapi's PTP_RISING_EDGE and PTP_FALLING_EDGE bits.
type Edge uint32

// Edges.
const (
	EdgeRising  Edge = 1 << 1
	EdgeFalling Edge = 1 << 2
	EdgeBoth         = EdgeRising | EdgeFalling
)

func (e Edge) String() string {
	switch e {
	case 0:
		return "unknown"
	case EdgeRising:
		return "rising"
	case EdgeFalling:
		return "falling"
	case EdgeBoth:
		return "both"
	}
	return "edge(" + strconv.FormatUint(uint64(e), 10) + ")"
}

// ExttsChannel asks for external timestamps on one channel.
type ExttsChannel struct {
	Channel int  // extts channel (ptp_extts_request.index), below Caps.ExtTS
	Pin     int  // programmable pin assigned to the channel, or NoPin
	Edges   Edge // rising (the default when 0), falling or both
	// PeriodNS is the expected time between two stamps on this channel (1e9 for
	// a PPS on one edge), or 0. When set, a gap of about k periods counts k-1
	// missed edges in ExttsStats.MissedEdges.
	PeriodNS int64
}

// External timestamps (extts): a PHC stamps edges on an input pin in its own
// time and queues them for read(2) on its character device, as
// Documentation/driver-api/ptp.rst and include/uapi/linux/ptp_clock.h describe:
// PTP_PIN_SETFUNC assigns a programmable pin to an extts channel,
// PTP_EXTTS_REQUEST2 enables the channel for rising, falling or both edges, and
// every read returns whole struct ptp_extts_event records.
//
// ExttsEvent is one decoded external timestamp.
type ExttsEvent struct {
	PHCNS   int64           // time of the edge in the PHC's time, ns
	Domain  timebase.Domain // timebase.PHC(index) of the clock that stamped it
	Channel uint32          // extts channel (ptp_extts_event.index)
	// Flags are the event's flags as the driver reports them: bit 0
	// (PTP_EXTTS_EVENT_VALID) and the edge bits on drivers that say which edge
	// they stamped; 0 on most drivers and kernels.
	Flags uint32
}

// Edge is the edge the driver reports for the event, or 0 when it does not say.
func (e *ExttsEvent) Edge() Edge { return Edge(e.Flags) & EdgeBoth }

// ExttsStats are a reader's counters since it was made.
//
// Loss, honestly: the kernel keeps the stamps of one open file in a queue of
// PTP_MAX_TIMESTAMPS (128) slots, of which 127 can wait; when it is full the
// oldest stamp is overwritten without a trace. Events carry no sequence number
// and the kernel keeps no drop counter, so a reader cannot know how many stamps
// it lost. What can be counted is counted (ExttsStats): reads that came back
// full (the queue had a backlog, so an overflow was possible), stamps that went
// backwards on a channel, and, for inputs with a known period (a PPS), the edges
// missing between two stamps. Before Linux 6.7 all open files of one PHC share a
// single queue: another reader of the device (ts2phc, testptp) takes stamps away
// from this one, and neither can tell.
type ExttsStats struct {
	Events uint64 // events decoded
	Reads  uint64 // reads that returned events
	// FullReads are reads that returned the kernel's maximum of
	// KernelExttsPerRead events or filled the caller's buffer: a backlog may
	// have waited, and if it reached KernelExttsQueue-1 the kernel dropped
	// stamps it does not count.
	FullReads uint64
	// MissedEdges are edges missing between stamps of channels with a PeriodNS.
	MissedEdges uint64
	// Backwards are stamps earlier than the previous one on their channel (a
	// PHC step, or another writer of the queue).
	Backwards uint64
	// OtherChannels are events on channels this reader did not enable (another
	// process's, on kernels where open files share one queue).
	OtherChannels uint64
}

// ErrPartialEvent is a read that ended inside a struct ptp_extts_event.
var ErrPartialEvent = errors.New("partial extts event")

// ErrOutOfRange is a channel or pin the clock does not have.
var ErrOutOfRange = errors.New("out of range")

// ExttsError is a refused extts set-up, naming device, channel, pin and reason.
type ExttsError struct {
	Device  string
	Channel int
	Pin     int    // NoPin when no pin was involved
	PinName string // the pin's name, when known
	Reason  string
	Err     error
}

func (e *ExttsError) Error() string {
	s := "phc " + e.Device + " extts channel " + strconv.Itoa(e.Channel)
	if e.Pin != NoPin {
		s += " pin " + strconv.Itoa(e.Pin)
		if e.PinName != "" {
			s += " (" + e.PinName + ")"
		}
	}
	s += ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause (an errno, ErrOutOfRange, errors.ErrUnsupported).
func (e *ExttsError) Unwrap() error { return e.Err }

// validateExtts checks requests against the clock's capabilities before any
// ioctl, so a bad configuration changes nothing on the device.
func validateExtts(path string, caps Caps, chans []ExttsChannel) error {
	for i := range chans {
		c := &chans[i]
		bad := func(reason string, err error) error {
			return &ExttsError{Device: path, Channel: c.Channel, Pin: c.Pin, Reason: reason, Err: err}
		}
		if c.Edges == 0 {
			c.Edges = EdgeRising
		}
		switch {
		case caps.ExtTS == 0:
			return bad("the clock has no external timestamp channels (n_ext_ts 0)", errors.ErrUnsupported)
		case c.Channel < 0 || c.Channel >= caps.ExtTS:
			return bad(fmt.Sprintf("channel out of range: the clock has %d (0..%d)", caps.ExtTS, caps.ExtTS-1), ErrOutOfRange)
		case c.Pin != NoPin && caps.Pins == 0:
			return bad("the clock has no programmable pins (use no pin)", ErrOutOfRange)
		case c.Pin != NoPin && (c.Pin < 0 || c.Pin >= caps.Pins):
			return bad(fmt.Sprintf("pin out of range: the clock has %d (0..%d)", caps.Pins, caps.Pins-1), ErrOutOfRange)
		case c.Edges&^EdgeBoth != 0:
			return bad(fmt.Sprintf("edges %#x: want rising, falling or both", uint32(c.Edges)), ErrOutOfRange)
		case c.PeriodNS < 0:
			return bad("negative period", ErrOutOfRange)
		}
		for j := range chans[:i] {
			if chans[j].Channel == c.Channel {
				return bad("channel requested twice", nil)
			}
			if c.Pin != NoPin && chans[j].Pin == c.Pin {
				return bad(fmt.Sprintf("pin also requested for channel %d", chans[j].Channel), nil)
			}
		}
	}
	return nil
}

// DecodeExttsEvents decodes the struct ptp_extts_event records in b (as one
// read returns them) into dst, stamping each with the clock's domain d, and
// returns how many it decoded: min(len(dst), len(b)/ExttsEventSize) unless a
// record is malformed. It does not allocate. Trailing bytes that are not a whole
// record are an ErrPartialEvent, after the whole records before them; a
// nanosecond field of a second or more, or seconds that do not fit an int64 of
// nanoseconds, are errors naming the record.
func DecodeExttsEvents(dst []ExttsEvent, b []byte, d timebase.Domain) (int, error) {
	n := min(len(dst), len(b)/ExttsEventSize)
	for i := 0; i < n; i++ {
		r := b[i*ExttsEventSize : (i+1)*ExttsEventSize : (i+1)*ExttsEventSize]
		sec := int64(binary.NativeEndian.Uint64(r[0:8]))
		nsec := binary.NativeEndian.Uint32(r[8:12])
		if nsec >= 1_000_000_000 {
			return i, fmt.Errorf("extts event %d: nsec %d out of range", i, nsec)
		}
		if sec > maxExttsSec || sec < -maxExttsSec {
			return i, fmt.Errorf("extts event %d: %d s do not fit int64 nanoseconds", i, sec)
		}
		dst[i] = ExttsEvent{
			PHCNS:   sec*1_000_000_000 + int64(nsec),
			Domain:  d,
			Channel: binary.NativeEndian.Uint32(r[16:20]),
			Flags:   binary.NativeEndian.Uint32(r[20:24]),
		}
	}
	if n == len(b)/ExttsEventSize && len(b)%ExttsEventSize != 0 {
		return n, fmt.Errorf("%w: %d trailing bytes of %d", ErrPartialEvent, len(b)%ExttsEventSize, ExttsEventSize)
	}
	return n, nil
}

// maxExttsSec keeps sec*1e9+nsec inside int64 (year 2262).
const maxExttsSec = (1<<63-1)/1_000_000_000 - 1

// AppendExttsEvent appends the kernel encoding of one event (native byte
// order): for tests, fixtures and simulated devices.
func AppendExttsEvent(b []byte, ch uint32, phcNS int64, flags uint32) []byte {
	sec, nsec := phcNS/1_000_000_000, phcNS%1_000_000_000
	if nsec < 0 {
		sec, nsec = sec-1, nsec+1_000_000_000
	}
	b = binary.NativeEndian.AppendUint64(b, uint64(sec))
	b = binary.NativeEndian.AppendUint32(b, uint32(nsec))
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint32(b, ch)
	b = binary.NativeEndian.AppendUint32(b, flags)
	return binary.NativeEndian.AppendUint64(b, 0)
}

// lossTracker counts what can be counted of the kernel's silent losses.
type lossTracker struct {
	period []int64 // by channel; 0: unknown
	last   []int64 // previous stamp by channel
	seen   []bool
	mine   []bool
}

func newLossTracker(nchan int, chans []ExttsChannel) lossTracker {
	t := lossTracker{period: make([]int64, nchan), last: make([]int64, nchan), seen: make([]bool, nchan), mine: make([]bool, nchan)}
	for _, c := range chans {
		if c.Channel >= 0 && c.Channel < nchan {
			t.period[c.Channel], t.mine[c.Channel] = c.PeriodNS, true
		}
	}
	return t
}

// observe updates s with one batch of events.
func (t *lossTracker) observe(evs []ExttsEvent, s *exttsCounters) {
	var missed, back, other uint64
	for i := range evs {
		e := &evs[i]
		ch := int(e.Channel)
		if ch >= len(t.mine) || !t.mine[ch] {
			other++
			continue
		}
		if t.seen[ch] {
			gap := e.PHCNS - t.last[ch]
			switch p := t.period[ch]; {
			case gap < 0:
				back++
			case p > 0 && gap > p+p/2:
				missed += uint64((gap+p/2)/p) - 1
			}
		}
		t.last[ch], t.seen[ch] = e.PHCNS, true
	}
	if missed != 0 {
		s.missed.Add(missed)
	}
	if back != 0 {
		s.backwards.Add(back)
	}
	if other != 0 {
		s.other.Add(other)
	}
}

// exttsCounters are ExttsStats, written by the reading goroutine and read by
// any other.
type exttsCounters struct {
	events, reads, full, missed, backwards, other atomic.Uint64
}

func (c *exttsCounters) stats() ExttsStats {
	return ExttsStats{
		Events: c.events.Load(), Reads: c.reads.Load(), FullReads: c.full.Load(),
		MissedEdges: c.missed.Load(), Backwards: c.backwards.Load(), OtherChannels: c.other.Load(),
	}
}
