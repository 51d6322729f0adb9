package agent

import (
	"runtime"
	"runtime/debug"

	"github.com/monagent/monagent/status"
)

// newBuildInfo is what monagent_build_info says of this binary: the build's
// commit as its version (dev-<12 hex>, "dev" without one) until SetVersion,
// the Go version and the target (GOARM's v7 included).
func newBuildInfo() *status.BuildInfo {
	b := &status.BuildInfo{Version: "dev", GoVersion: runtime.Version(), Target: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Version = "dev-" + s.Value[:min(12, len(s.Value))]
			case "GOARM":
				b.Target += "v" + s.Value
			}
		}
	}
	return b
}
