//go:build !(linux && amd64)

package timeapi

import (
	"testing"

	"github.com/monagent/monagent/timebase"
)

func realtimeClock(testing.TB) timebase.Clock { return timebase.Realtime }
