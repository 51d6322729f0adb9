//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildExttsSources(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("extts: needs Linux, not %s", runtime.GOOS)
}
