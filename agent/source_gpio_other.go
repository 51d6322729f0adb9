//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildGPIOSources(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("gpio: needs Linux, not %s", runtime.GOOS)
}
