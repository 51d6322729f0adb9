package sensors

import (
	"flag"
	"testing"

	"github.com/monagent/monagent/sensors/sensorstest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const adcRecords = sensorstest.ADCRecords

func board(t testing.TB) FS { return NewFS(sensorstest.Board(t)) }
