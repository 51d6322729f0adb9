package gpio

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/monagent/monagent/timebase"
)

// PPS is the kernel's pulse-per-second interface (/dev/ppsN,
// include/uapi/linux/pps.h and Documentation/driver-api/pps.rst): a PPS
// driver (pps-gpio, pps-ktimer, a serial line discipline, a PHC's PPS) stamps
// each assert and clear edge in CLOCK_REALTIME and keeps only the latest of
// each, with a running sequence number. PPS_FETCH waits for the next edge and
// returns both; a reader that falls behind sees the sequence numbers jump,
// and PPSTracker counts the jumps as lost edges.

// Sizes and offsets of the PPS structs. pps_ktime is {__s64 sec; __s32 nsec;
// __u32 flags} and pps_kinfo ends with an __s32 padded to the 8-byte
// alignment of sec, so they are the same on amd64, arm64 and 32-bit ARM EABI
// (not on i386, whose 4-byte alignment makes pps_kinfo 44 bytes).
const (
	PPSKTimeSize  = 16 // struct pps_ktime
	PPSKInfoSize  = 48 // struct pps_kinfo
	PPSFDataSize  = 64 // struct pps_fdata: pps_kinfo info; pps_ktime timeout
	ppsKParamSize = 40 // struct pps_kparams

	ktSec   = 0  // __s64 sec
	ktNsec  = 8  // __s32 nsec
	ktFlags = 12 // __u32 flags

	kiAssertSeq = 0  // __u32 assert_sequence
	kiClearSeq  = 4  // __u32 clear_sequence
	kiAssertTU  = 8  // struct pps_ktime assert_tu
	kiClearTU   = 24 // struct pps_ktime clear_tu
	kiMode      = 40 // int current_mode
	fdTimeout   = PPSKInfoSize

	kpAPIVersion = 0 // int api_version
	kpMode       = 4 // int mode
)

// PPSMode is the PPS mode and capability bits (PPS_CAPTUREASSERT etc.): the
// caps a device has (PPS_GETCAP) and the mode in force (PPS_GETPARAMS,
// pps_kinfo.current_mode).
type PPSMode uint32

// The bits of linux/pps.h.
const (
	PPSCaptureAssert PPSMode = 0x01
	PPSCaptureClear  PPSMode = 0x02
	PPSOffsetAssert  PPSMode = 0x10
	PPSOffsetClear   PPSMode = 0x20
	PPSEchoAssert    PPSMode = 0x40
	PPSEchoClear     PPSMode = 0x80
	PPSCanWait       PPSMode = 0x100
	PPSCanPoll       PPSMode = 0x200
	PPSTSFmtTSpec    PPSMode = 0x1000
	PPSTSFmtNTPFP    PPSMode = 0x2000
)

var ppsModeNames = []struct {
	bit  PPSMode
	name string
}{
	{PPSCaptureAssert, "capture_assert"}, {PPSCaptureClear, "capture_clear"},
	{PPSOffsetAssert, "offset_assert"}, {PPSOffsetClear, "offset_clear"},
	{PPSEchoAssert, "echo_assert"}, {PPSEchoClear, "echo_clear"},
	{PPSCanWait, "can_wait"}, {PPSCanPoll, "can_poll"},
	{PPSTSFmtTSpec, "tsfmt_tspec"}, {PPSTSFmtNTPFP, "tsfmt_ntpfp"},
}

// Names lists the bits set, in the order of linux/pps.h; bits it does not
// know show as hex.
func (m PPSMode) Names() []string {
	out := []string{}
	rest := m
	for _, n := range ppsModeNames {
		if m&n.bit != 0 {
			out = append(out, n.name)
			rest &^= n.bit
		}
	}
	if rest != 0 {
		out = append(out, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return out
}

// String joins Names with "|"; "none" when no bit is set.
func (m PPSMode) String() string {
	if m == 0 {
		return "none"
	}
	return strings.Join(m.Names(), "|")
}

// PPSEvent is one PPS_FETCH: the latest assert and clear edges the device
// has stamped, each with its sequence number (0: none yet). The stamps count
// nanoseconds of CLOCK_REALTIME (DomainRealtime); a stamp of 0 means the
// edge has not been seen.
type PPSEvent struct {
	AssertNS  int64
	ClearNS   int64
	AssertSeq uint32
	ClearSeq  uint32
	// Mode is the device's mode when it was fetched (current_mode).
	Mode PPSMode
	// NewAssert and NewClear say which edges are new since the previous
	// fetch; LostAssert and LostClear count the edges of each kind stamped
	// just before them that no fetch saw (set by PPSTracker.Observe, so by
	// PPSDevice.Fetch; the decoder leaves them zero).
	NewAssert, NewClear   bool
	LostAssert, LostClear uint64
}

// PPSEdge is one kind of edge of a fetch: its latest stamp and sequence
// number, whether it is new, and the edges of its kind lost before it.
type PPSEdge struct {
	NS   int64
	Seq  uint32
	New  bool
	Lost uint64
}

// Edges are the event's assert and clear edges, in that order.
func (e *PPSEvent) Edges() [2]PPSEdge {
	return [2]PPSEdge{{e.AssertNS, e.AssertSeq, e.NewAssert, e.LostAssert}, {e.ClearNS, e.ClearSeq, e.NewClear, e.LostClear}}
}

// Domain is the clock the stamps count in: PPS drivers stamp with
// CLOCK_REALTIME.
func (e *PPSEvent) Domain() timebase.Domain { return timebase.DomainRealtime }

// DecodePPSKInfo decodes a struct pps_kinfo (the first PPSKInfoSize bytes of
// b, native byte order) as PPS_FETCH leaves it. It does not allocate. A
// buffer too short, or a stamp whose nanoseconds are outside [0, 1e9) or
// whose seconds overflow int64 nanoseconds, is an error wrapping ErrBadEvent.
func DecodePPSKInfo(b []byte) (PPSEvent, error) {
	if len(b) < PPSKInfoSize {
		return PPSEvent{}, fmt.Errorf("pps_kinfo of %d bytes, want %d: %w", len(b), PPSKInfoSize, ErrBadEvent)
	}
	a, err := ktimeNS(b[kiAssertTU:])
	if err != nil {
		return PPSEvent{}, fmt.Errorf("assert_tu: %w", err)
	}
	c, err := ktimeNS(b[kiClearTU:])
	if err != nil {
		return PPSEvent{}, fmt.Errorf("clear_tu: %w", err)
	}
	return PPSEvent{
		AssertNS:  a,
		ClearNS:   c,
		AssertSeq: binary.NativeEndian.Uint32(b[kiAssertSeq:]),
		ClearSeq:  binary.NativeEndian.Uint32(b[kiClearSeq:]),
		Mode:      PPSMode(binary.NativeEndian.Uint32(b[kiMode:])),
	}, nil
}

// maxKtimeSec is the largest second count that fits int64 nanoseconds.
const maxKtimeSec int64 = (1<<63 - 1) / 1_000_000_000

func ktimeNS(b []byte) (int64, error) {
	sec := int64(binary.NativeEndian.Uint64(b[ktSec:]))
	nsec := int32(binary.NativeEndian.Uint32(b[ktNsec:]))
	if nsec < 0 || nsec >= 1e9 {
		return 0, fmt.Errorf("nsec %d outside [0, 1e9): %w", nsec, ErrBadEvent)
	}
	if sec < 0 || sec >= maxKtimeSec {
		return 0, fmt.Errorf("sec %d outside [0, %d): %w", sec, maxKtimeSec, ErrBadEvent)
	}
	return sec*1e9 + int64(nsec), nil
}

// AppendPPSKInfo appends the kernel's encoding of e as a struct pps_kinfo
// (native byte order): the inverse of DecodePPSKInfo, for fixtures and tests.
func AppendPPSKInfo(b []byte, e PPSEvent) []byte {
	var r [PPSKInfoSize]byte
	binary.NativeEndian.PutUint32(r[kiAssertSeq:], e.AssertSeq)
	binary.NativeEndian.PutUint32(r[kiClearSeq:], e.ClearSeq)
	putKtime(r[kiAssertTU:], e.AssertNS)
	putKtime(r[kiClearTU:], e.ClearNS)
	binary.NativeEndian.PutUint32(r[kiMode:], uint32(e.Mode))
	return append(b, r[:]...)
}

func putKtime(b []byte, ns int64) {
	binary.NativeEndian.PutUint64(b[ktSec:], uint64(ns/1e9))
	binary.NativeEndian.PutUint32(b[ktNsec:], uint32(ns%1e9))
}

// PPSTracker counts the PPS edges a reader saw and those it missed. The
// device keeps only its latest assert and clear; each has a sequence number
// that grows by one per edge, so a jump of d between two fetches means d-1
// edges were never fetched. The first fetch is a baseline: edges before it
// are not counted. For each edge kind, received + lost = the edges the
// device stamped after the baseline, up to the last fetch.
//
// The zero value is ready; it does not allocate and is not safe for
// concurrent use.
type PPSTracker struct {
	seen                  bool
	assertSeq, clearSeq   uint32
	assertRecv, clearRecv uint64
	assertLost, clearLost uint64
	backwards             uint64
}

// Baseline records e's sequence numbers as the starting point without
// counting them as received. Observe calls it for the first event.
func (t *PPSTracker) Baseline(e *PPSEvent) {
	t.assertSeq, t.clearSeq, t.seen = e.AssertSeq, e.ClearSeq, true
}

// Observe accounts one fetch and sets which of e's edges are new in it
// (NewAssert, NewClear) and how many of each kind were lost just before
// (LostAssert, LostClear). A sequence number that went backwards (a device
// re-registered) is counted as an anomaly and becomes the new baseline.
func (t *PPSTracker) Observe(e *PPSEvent) {
	if !t.seen {
		t.Baseline(e)
		e.NewAssert, e.NewClear, e.LostAssert, e.LostClear = false, false, 0, 0
		return
	}
	e.NewAssert, e.LostAssert = t.step(e.AssertSeq, &t.assertSeq, &t.assertRecv, &t.assertLost)
	e.NewClear, e.LostClear = t.step(e.ClearSeq, &t.clearSeq, &t.clearRecv, &t.clearLost)
}

func (t *PPSTracker) step(cur uint32, last *uint32, recv, lost *uint64) (bool, uint64) {
	d := cur - *last
	*last = cur
	switch {
	case d == 0:
		return false, 0
	case d >= 1<<31:
		t.backwards++
		return false, 0
	}
	*recv++
	*lost += uint64(d - 1)
	return true, uint64(d - 1)
}

// Received is the assert and clear edges fetched after the baseline.
func (t *PPSTracker) Received() (assert, clear uint64) { return t.assertRecv, t.clearRecv }

// Lost is the assert and clear edges the device stamped but no fetch saw.
func (t *PPSTracker) Lost() (assert, clear uint64) { return t.assertLost, t.clearLost }

// Anomalies counts sequence numbers that went backwards (never from one
// registration of a device).
func (t *PPSTracker) Anomalies() uint64 { return t.backwards }

// PPSInfo is what a PPS device says about itself.
type PPSInfo struct {
	Path string
	// Caps is what the device can do (PPS_GETCAP).
	Caps PPSMode
	// Mode is the mode in force (PPS_GETPARAMS): which edges are captured.
	Mode PPSMode
	// APIVersion is the kernel's PPS API version (pps_kparams.api_version).
	APIVersion int
}

// CanAssert reports whether assert edges are captured now.
func (i *PPSInfo) CanAssert() bool { return i.Mode&PPSCaptureAssert != 0 }

// CanClear reports whether clear edges are captured now.
func (i *PPSInfo) CanClear() bool { return i.Mode&PPSCaptureClear != 0 }

// PPSConfig says which edges a PPS reader needs; the open fails, naming the
// device and why, when the device does not capture them.
type PPSConfig struct {
	Assert bool // need assert edges (the pulse)
	Clear  bool // need clear edges
}
