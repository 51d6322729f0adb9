//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildPPSSources(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("pps: needs Linux, not %s", runtime.GOOS)
}
