//go:build !linux

package agent

import (
	"fmt"
	"runtime"
)

func buildNTPSources(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("ntp probe: kernel packet timestamps need Linux, not %s", runtime.GOOS)
}

func buildChronySource(env *Env) ([]Source, error) {
	return nil, fmt.Errorf("chrony monitor: needs Linux, not %s", runtime.GOOS)
}
