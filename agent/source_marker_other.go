//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildMarkerSource(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("marker: needs Linux, not %s", runtime.GOOS)
}
