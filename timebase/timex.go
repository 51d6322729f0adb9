package timebase

import "strings"

// KernelState is the kernel's clock discipline state as adjtimex(2) reports it
// (read-only: modes 0). Units are converted to integers at the edge: the kernel's
// scaled ppm (ppm << 16) becomes parts per billion.
type KernelState struct {
	State       int   // return value: TIME_OK (0), TIME_INS, TIME_DEL, TIME_OOP, TIME_WAIT, TIME_ERROR (5)
	OffsetNS    int64 // current PLL offset (ns, or us scaled when STA_NANO is clear)
	FreqPPB     int64 // frequency offset
	MaxErrorNS  int64 // maximum error
	EstErrorNS  int64 // estimated error
	Status      int32 // STA_* bits
	Constant    int64 // PLL time constant
	PrecisionNS int64 // clock precision
	ToleranceP  int64 // frequency tolerance (ppb)
	TickNS      int64 // ns between clock ticks (tick us * 1000)
	PPSFreqPPB  int64
	JitterNS    int64
	Shift       int64
	StabilPPB   int64
	JitCnt      int64
	CalCnt      int64
	ErrCnt      int64
	StbCnt      int64
	TAIOffsetS  int64 // TAI - UTC (s), 0 when never set
}

// Kernel status bits of adjtimex(2) (STA_*).
const (
	StaPLL       = 0x0001
	StaPPSFreq   = 0x0002
	StaPPSTime   = 0x0004
	StaFLL       = 0x0008
	StaIns       = 0x0010
	StaDel       = 0x0020
	StaUnsync    = 0x0040
	StaFreqHold  = 0x0080
	StaPPSSignal = 0x0100
	StaPPSJitter = 0x0200
	StaPPSWander = 0x0400
	StaPPSError  = 0x0800
	StaClockErr  = 0x1000
	StaNano      = 0x2000
	StaMode      = 0x4000
	StaClk       = 0x8000
)

// TimeError is the adjtimex return value for an unsynchronised clock.
const TimeError = 5

// Synced reports whether the kernel considers the clock synchronised, as
// node_exporter's timex collector does: not TIME_ERROR and STA_UNSYNC clear.
func (k KernelState) Synced() bool { return k.State != TimeError && k.Status&StaUnsync == 0 }

var staNames = []struct {
	bit  int32
	name string
}{
	{StaPLL, "PLL"}, {StaPPSFreq, "PPSFREQ"}, {StaPPSTime, "PPSTIME"}, {StaFLL, "FLL"},
	{StaIns, "INS"}, {StaDel, "DEL"}, {StaUnsync, "UNSYNC"}, {StaFreqHold, "FREQHOLD"},
	{StaPPSSignal, "PPSSIGNAL"}, {StaPPSJitter, "PPSJITTER"}, {StaPPSWander, "PPSWANDER"},
	{StaPPSError, "PPSERROR"}, {StaClockErr, "CLOCKERR"}, {StaNano, "NANO"}, {StaMode, "MODE"},
	{StaClk, "CLK"},
}

// StatusString names the set STA_* bits, e.g. "PLL|NANO".
func (k KernelState) StatusString() string {
	var b strings.Builder
	for _, s := range staNames {
		if k.Status&s.bit != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(s.name)
		}
	}
	return b.String()
}

// StateString names the adjtimex return value.
func (k KernelState) StateString() string {
	switch k.State {
	case 0:
		return "TIME_OK"
	case 1:
		return "TIME_INS"
	case 2:
		return "TIME_DEL"
	case 3:
		return "TIME_OOP"
	case 4:
		return "TIME_WAIT"
	case 5:
		return "TIME_ERROR"
	}
	return "TIME_UNKNOWN"
}
