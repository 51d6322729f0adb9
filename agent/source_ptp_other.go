//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildPtp4lSource(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("ptp4l monitor: needs Linux, not %s", runtime.GOOS)
}

func buildPTPProbe(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("ptp probe: needs Linux, not %s", runtime.GOOS)
}
