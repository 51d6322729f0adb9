package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
)

// TestHwmonSourceChipRemovedOnRealKernel: the sensors source reads an LM75
// and an INA226 that i2c-stub emulates in the rig's amd64 guest, with the
// kernel's lm75 and ina2xx drivers. The LM75 deleted from the bus mid-run is
// one collection error naming it and one read error counted; the next
// collection lists the sensors again and reads the INA226 without error;
// the LM75 added again is read from the next periodic listing (rescan).
func TestHwmonSourceChipRemovedOnRealKernel(t *testing.T) {
	stub := sensorstest.RequireI2CStub(t)
	const lm75, ina226 = sensorstest.StubLM75, sensorstest.StubINA226
	for _, w := range []struct {
		addr uint16
		reg  uint8
		v    uint16
	}{{lm75, 0, 0x1a80}, {ina226, 3, 160}} { // 26.5 °C; 160 × 6.25 mW
		if err := stub.WriteWordSwapped(w.addr, w.reg, w.v); err != nil {
			t.Fatal(err)
		}
	}
	stub.BindChips(t)

	clock := time.Now()
	cfg := SensorsConfig{Enabled: true, Interval: time.Second, Hwmon: true, Rescan: time.Hour,
		Include: []string{"hwmon/lm75/temp1", "hwmon/ina226/power1"}}
	src := newSensorsSource(cfg, sensors.NewFS("", ""), func() time.Time { return clock })
	defer src.Close()
	collectOnce := func(what string) (map[string]int64, uint64, error) {
		b := &collect.Batch{}
		err := src.Collect(context.Background(), b)
		got := map[string]int64{}
		for _, r := range b.Records {
			f, _ := r.Field("value")
			got[r.Tag("device")+"/"+r.Tag("sensor")] = f.I
		}
		var readErrors uint64
		for _, f := range src.SelfFields() {
			if f.Key == "read_errors" {
				readErrors = f.U
			}
		}
		t.Logf("%s: %v, error %v, read_errors %d", what, got, err, readErrors)
		return got, readErrors, err
	}
	want := map[string]int64{"lm75/temp1": 26_500_000, "ina226/power1": 1_000_000}
	check := func(what string, got map[string]int64, keys ...string) {
		t.Helper()
		if len(got) != len(keys) {
			t.Errorf("%s: %v, want %v only", what, got, keys)
		}
		for _, k := range keys {
			if got[k] != want[k] {
				t.Errorf("%s: %s = %d, want %d", what, k, got[k], want[k])
			}
		}
	}

	got, n, err := collectOnce("both chips")
	if err != nil || n != 0 {
		t.Fatalf("both chips: error %v, %d read errors", err, n)
	}
	check("both chips", got, "lm75/temp1", "ina226/power1")

	if err := stub.DeleteDevice(lm75); err != nil {
		t.Fatal(err)
	}
	got, n, err = collectOnce("LM75 deleted")
	if err == nil || !strings.Contains(err.Error(), "temp1_input") || n != 1 {
		t.Errorf("LM75 deleted: error %v, %d read errors; want one naming temp1_input", err, n)
	}
	check("LM75 deleted", got, "ina226/power1")
	for i := range 3 {
		got, n, err = collectOnce("LM75 gone")
		if err != nil || n != 1 {
			t.Errorf("collection %d with the LM75 gone: error %v, %d read errors; want none new", i, err, n)
		}
		check("LM75 gone", got, "ina226/power1")
	}

	if err := stub.NewDevice("lm75", lm75); err != nil {
		t.Fatal(err)
	}
	clock = clock.Add(cfg.Rescan)
	got, n, err = collectOnce("LM75 back, rescan due")
	if err != nil || n != 1 {
		t.Errorf("LM75 back: error %v, %d read errors", err, n)
	}
	check("LM75 back", got, "lm75/temp1", "ina226/power1")
}
