package timebase

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// ReadKernelState reads the clock discipline state with adjtimex(2), modes 0.
func ReadKernelState() (KernelState, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return KernelState{}, fmt.Errorf("adjtimex: %w", err)
	}
	return kernelStateFromTimex(state, &tx), nil
}

// kernelStateFromTimex converts the kernel struct; split out for golden tests.
func kernelStateFromTimex(state int, tx *unix.Timex) KernelState {
	// Offset is in us unless STA_NANO is set; frequencies are ppm scaled by 2^16.
	off := int64(tx.Offset)
	if tx.Status&StaNano == 0 {
		off *= 1000
	}
	scaledPPB := func(v int64) int64 { // round half away from zero
		if v < 0 {
			return -((-v*1000 + 32768) >> 16)
		}
		return (v*1000 + 32768) >> 16
	}
	return KernelState{
		State:       state,
		OffsetNS:    off,
		FreqPPB:     scaledPPB(int64(tx.Freq)),
		MaxErrorNS:  int64(tx.Maxerror) * 1000,
		EstErrorNS:  int64(tx.Esterror) * 1000,
		Status:      tx.Status,
		Constant:    int64(tx.Constant),
		PrecisionNS: int64(tx.Precision) * 1000,
		ToleranceP:  scaledPPB(int64(tx.Tolerance)),
		TickNS:      int64(tx.Tick) * 1000,
		PPSFreqPPB:  scaledPPB(int64(tx.Ppsfreq)),
		JitterNS:    jitterNS(int64(tx.Jitter), tx.Status),
		Shift:       int64(tx.Shift),
		StabilPPB:   scaledPPB(int64(tx.Stabil)),
		JitCnt:      int64(tx.Jitcnt),
		CalCnt:      int64(tx.Calcnt),
		ErrCnt:      int64(tx.Errcnt),
		StbCnt:      int64(tx.Stbcnt),
		TAIOffsetS:  int64(tx.Tai),
	}
}

func jitterNS(j int64, status int32) int64 {
	if status&StaNano == 0 {
		return j * 1000
	}
	return j
}
