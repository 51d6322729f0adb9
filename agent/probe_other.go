//go:build !linux

package agent

import "runtime"

func readPHC(path string) PHCProbe {
	return PHCProbe{Error: "PTP hardware clocks need Linux, not " + runtime.GOOS}
}
