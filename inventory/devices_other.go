//go:build !linux

package inventory

import "runtime"

func readPHC(path string) PHCProbe {
	return PHCProbe{Error: "PTP hardware clocks need Linux, not " + runtime.GOOS}
}

func readGPIOChip(path string) GPIOChipProbe {
	return GPIOChipProbe{Path: path, Error: "GPIO character devices need Linux, not " + runtime.GOOS}
}

func readPPS(path string) PPSProbe {
	return PPSProbe{Error: "PPS devices need Linux, not " + runtime.GOOS}
}
