package agent

import (
	"testing"
	"unsafe"

	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
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
		{"gpsd message", unsafe.Sizeof(gnssEvent{}), gnssEventBytes},
		{"extts stamp", unsafe.Sizeof(exttsStamp{}), exttsEventBytes},
		{"marker event (without its strings)", unsafe.Sizeof(markerEvent{}), markerEventBytes - 512},
		{"IIO scan", unsafe.Sizeof(scan{}), scanEventBytes},
		{"PTP exchange", unsafe.Sizeof(ptp.Exchange{}), ptpExchangeBytes},
		{"hca record (a model's 12 fields)", hcaRecordSize(), hcaRecordBytes},
	} {
		if c.size > c.budget {
			t.Errorf("%s: %d bytes, the memory check counts %d", c.name, c.size, c.budget)
		}
	}
}

// hcaRecordSize is the memory of a queued hca_model record: the ring's entry
// and its tag and field arrays.
func hcaRecordSize() uintptr {
	r := record.Record{Tags: make([]record.Tag, 2), Fields: modelFields(timebase.LinearModel{}, 1, 0)}
	return unsafe.Sizeof(pendingRecord{}) + uintptr(r.MemBytes())
}

// A marker series' memory, its map key and time guard, is within what the
// memory check counts per marker.max_series.
func TestMarkerSeriesWithinItsBudget(t *testing.T) {
	size := unsafe.Sizeof(markerSeries{}) + unsafe.Sizeof(record.SeriesTime{}) + 2*unsafe.Sizeof(uintptr(0)) + // key, guard, map slot and pointer
		marker.MaxNameLen + marker.MaxTags*(marker.MaxTagKeyLen+marker.MaxTagValueLen) // the strings
	if size > markerSeriesBytes {
		t.Errorf("a marker series holds %d bytes, the memory check counts %d", size, markerSeriesBytes)
	}
}
