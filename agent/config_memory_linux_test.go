package agent

import (
	"testing"
	"unsafe"

	"github.com/monagent/monagent/ptp"
)

// The memory config check states holds each ring's events at their real
// sizes: run on amd64 and on 32-bit ARM (qemu-arm-static) alike.
func TestEventSizesWithinTheirBudget(t *testing.T) {
	for _, c := range []struct {
		name         string
		size, budget uintptr
	}{
		{"gpio edge", unsafe.Sizeof(gpioEdge{}), gpioEventBytes},
		{"pps edge", unsafe.Sizeof(ppsEdge{}), ppsEventBytes},
		{"extts stamp", unsafe.Sizeof(exttsStamp{}), exttsEventBytes},
		{"marker event (without its strings)", unsafe.Sizeof(markerEvent{}), markerEventBytes - 512},
		{"IIO scan", unsafe.Sizeof(scan{}), scanEventBytes},
		{"PTP exchange", unsafe.Sizeof(ptp.Exchange{}), ptpExchangeBytes},
	} {
		if c.size > c.budget {
			t.Errorf("%s: %d bytes, the memory check counts %d", c.name, c.size, c.budget)
		}
	}
}
