package gpio

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/monagent/monagent/timebase"
)

// Sizes of the kernel's records (include/uapi/linux/gpio.h); identical on
// every Linux architecture.
const (
	EventSize       = 48  // struct gpio_v2_line_event
	LineInfoSize    = 256 // struct gpio_v2_line_info
	InfoChangedSize = 288 // struct gpio_v2_line_info_changed

	// MaxLines is GPIO_V2_LINES_MAX: lines in one request.
	MaxLines = 64
	// MaxEventBufferSize is the largest event_buffer_size the kernel takes
	// (16 events per requested line when zero).
	MaxEventBufferSize = 1024
	maxNameSize        = 32 // GPIO_MAX_NAME_SIZE
	maxAttrs           = 10 // GPIO_V2_LINE_NUM_ATTRS_MAX
)

// Edge is the edge of one event, as the kernel reports it in
// gpio_v2_line_event.id.
type Edge uint8

// The edges (GPIO_V2_LINE_EVENT_RISING_EDGE / _FALLING_EDGE).
const (
	EdgeRising  Edge = 1
	EdgeFalling Edge = 2
)

// String returns "rising" or "falling".
func (e Edge) String() string {
	return enumName([]string{EdgeRising: "rising", EdgeFalling: "falling"}, "edge", uint8(e))
}

// enumName is names[v], or kind(v) for a value without a name.
func enumName(names []string, kind string, v uint8) string {
	if int(v) < len(names) && names[v] != "" {
		return names[v]
	}
	return kind + "(" + strconv.Itoa(int(v)) + ")"
}

// EventClock is the clock the kernel stamps a request's edges with.
type EventClock uint8

// The event clocks. MONOTONIC is the kernel's default; HTE is a hardware
// timestamping engine (Tegra194 and later), whose stamps count in the
// engine's own timebase.
const (
	ClockMonotonic EventClock = iota
	ClockRealtime
	ClockHTE
)

// String returns "monotonic", "realtime" or "hte".
func (c EventClock) String() string { return enumName(clockNames, "clock", uint8(c)) }

// Domain is the timebase domain of the clock. HTE stamps have no system
// clock domain: it returns timebase.DomainUnknown for them, and a caller
// must translate them through a model of the engine's clock.
func (c EventClock) Domain() timebase.Domain {
	switch c {
	case ClockMonotonic:
		return timebase.DomainMonotonic
	case ClockRealtime:
		return timebase.DomainRealtime
	}
	return timebase.DomainUnknown
}

// Event is one edge as the kernel stamped it. It holds no pointers (24 bytes),
// so it can travel through a ring by value.
type Event struct {
	// TimestampNS is the kernel's stamp of the edge, in Clock's domain.
	TimestampNS int64
	// Offset is the line's offset on its chip.
	Offset uint32
	// Seqno counts the request's events (from 1); LineSeqno counts the
	// line's. Gaps are events the kernel dropped (see LossTracker).
	Seqno     uint32
	LineSeqno uint32
	Edge      Edge
	Clock     EventClock
}

// Domain is the clock domain of TimestampNS (DomainUnknown for HTE).
func (e *Event) Domain() timebase.Domain { return e.Clock.Domain() }

// EdgeDetect selects the edges a request reports.
type EdgeDetect uint8

// Edge detection of a request.
const (
	DetectNone EdgeDetect = iota
	DetectRising
	DetectFalling
	DetectBoth
)

// Detects says whether a request with this edge detection reports edges
// of kind e.
func (d EdgeDetect) Detects(e Edge) bool { return uint8(d)&uint8(e) != 0 }

// Bias is the pull of an input line.
type Bias uint8

// The biases; BiasAsIs leaves the line as the board configured it.
const (
	BiasAsIs Bias = iota
	BiasPullUp
	BiasPullDown
	BiasDisabled
)

// Consumer is the consumer label of monagent's requests on the chip at
// path: gpiolib-cdev names the lines' IRQs after it, so it tells them from
// other chips' in /proc/interrupts. It is cut to the kernel's 31 bytes.
func Consumer(path string) string {
	c := "monagent-" + filepath.Base(path)
	return c[:min(len(c), 31)]
}

// LineConfig is the configuration of a line request (all lines are inputs).
type LineConfig struct {
	// Consumer names the requester in line info (at most 31 bytes;
	// "monagent" when empty).
	Consumer  string
	Edge      EdgeDetect
	Bias      Bias
	ActiveLow bool
	// Debounce is the debounce period, in whole microseconds (0: none).
	Debounce time.Duration
	// Clock stamps the edges (ClockMonotonic by default).
	Clock EventClock
	// EventBufferSize is the kernel queue in events (0: 16 per line; at most
	// 1,024).
	EventBufferSize int
}

// LineFlags are the flags of a line (enum gpio_v2_line_flag).
type LineFlags uint64

// The line flags.
const (
	FlagUsed LineFlags = 1 << iota // bit 0 (GPIO_V2_LINE_FLAG_USED); each next flag the next bit
	FlagActiveLow
	FlagInput
	FlagOutput
	FlagEdgeRising
	FlagEdgeFalling
	FlagOpenDrain
	FlagOpenSource
	FlagBiasPullUp
	FlagBiasPullDown
	FlagBiasDisabled
	FlagEventClockRealtime
	FlagEventClockHTE
)

var flagNames = [...]string{"used", "active_low", "input", "output", "edge_rising",
	"edge_falling", "open_drain", "open_source", "pull_up", "pull_down", "bias_disabled",
	"clock_realtime", "clock_hte"}

// String lists the flags' names joined by "|" ("" for none).
func (f LineFlags) String() string {
	var b strings.Builder
	for i, name := range flagNames {
		if f&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := f &^ (1<<len(flagNames) - 1); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x" + strconv.FormatUint(uint64(rest), 16))
	}
	return b.String()
}

// ChipInfo describes a chip (struct gpiochip_info).
type ChipInfo struct {
	Name  string // gpiochipN
	Label string // the driver's label, e.g. "gpio-sim.0-node0" or "44e07000.gpio"
	Lines int
}

// LineInfo describes a line (struct gpio_v2_line_info).
type LineInfo struct {
	Offset   int
	Name     string
	Consumer string // who holds the line; "" when free
	Flags    LineFlags
	// Debounce is the debounce period in force (0: none).
	Debounce time.Duration
}

// Used reports whether the line is held by a consumer (the kernel or a
// process).
func (l *LineInfo) Used() bool { return l.Flags&FlagUsed != 0 }

// ChangeKind is what happened to a watched line.
type ChangeKind uint8

// The changes (enum gpio_v2_line_changed_type).
const (
	ChangeRequested ChangeKind = 1
	ChangeReleased  ChangeKind = 2
	ChangeConfig    ChangeKind = 3
)

// String returns "requested", "released" or "config".
func (k ChangeKind) String() string {
	return enumName([]string{ChangeRequested: "requested", ChangeReleased: "released", ChangeConfig: "config"}, "change", uint8(k))
}

// InfoChange reports a change of a watched line (struct
// gpio_v2_line_info_changed).
type InfoChange struct {
	Info LineInfo
	// TimestampNS is when the kernel saw the change, in MONOTONIC time.
	TimestampNS int64
	Kind        ChangeKind
}

// DevicePath is the device node name stands for: name itself when it holds
// a slash, else name in dev, the device directory (/dev on a board, a
// fixture tree in tests): DevicePath("/dev", "gpiochip0") is
// /dev/gpiochip0, as is DevicePath("/dev", "/dev/gpiochip0").
func DevicePath(dev, name string) string {
	if strings.ContainsRune(name, '/') {
		return name
	}
	return filepath.Join(dev, name)
}

// Errors callers test with errors.Is.
var (
	// ErrPartialEvent: a read returned a length that is not a whole number of
	// records (the kernel never does; a pipe or a broken driver can).
	ErrPartialEvent = errors.New("partial event")
	// ErrBadEvent: a record holds a value the kernel never writes.
	ErrBadEvent = errors.New("malformed event")
	// ErrNoUAPIv2: the kernel has no GPIO character device uAPI v2 (ENOTTY:
	// kernels before 5.10).
	ErrNoUAPIv2 = errors.New("kernel without GPIO uAPI v2")
	// ErrBusy wraps EBUSY: another consumer holds the line.
	ErrBusy = errors.New("line busy")
	// ErrUnsupported: the chip or kernel refuses a configuration (debounce,
	// event clock); it wraps errors.ErrUnsupported too.
	ErrUnsupported = errors.ErrUnsupported
)
