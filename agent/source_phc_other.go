//go:build !linux

package agent

import "runtime"

func buildPHCSources(env *Env) ([]Source, error) {
	env.Log.Info("PTP hardware clocks need Linux; phc source idle", "goos", runtime.GOOS)
	return nil, nil
}
