package sensors_test

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
)

const (
	lm75Addr   = sensorstest.StubLM75
	ina226Addr = sensorstest.StubINA226
)

// hwmonRegs are register values for the LM75 and the INA226 and the readings
// the drivers must give for them, in our units (sensors.Kind). LM75
// (Documentation/hwmon/lm75.rst, 9-bit resolution): temperature register
// bits 15..7 in 0.5 °C. INA226 with the driver's default 10 mΩ shunt
// (Documentation/hwmon/ina2xx.rst, the datasheet's LSBs): shunt voltage
// 2.5 µV, bus voltage 1.25 mV, current 250 µA (2.5 µV / 10 mΩ), power 25 ×
// the current's, 6.25 mW.
type hwmonRegs struct {
	lm75Temp                      uint16
	shunt, bus, power, current    uint16
	temp, in0, in1, curr1, power1 int64 // µ°C, nV, nV, nA, µW
}

var hwmonCases = []hwmonRegs{
	{lm75Temp: 0x1a80, shunt: 4000, bus: 9600, power: 160, current: 400,
		temp: 26_500_000, in0: 10_000_000, in1: 12_000_000_000, curr1: 100_000_000, power1: 1_000_000},
	{lm75Temp: 0xfa80, shunt: 0xfce0 /* -800 */, bus: 2640, power: 8, current: 0xff38, /* -200 */
		temp: -5_500_000, in0: -2_000_000, in1: 3_300_000_000, curr1: -50_000_000, power1: 50_000},
}

func (r hwmonRegs) write(t *testing.T, s *sensorstest.I2CStub) {
	t.Helper()
	for _, w := range []struct {
		addr uint16
		reg  uint8
		v    uint16
	}{
		{lm75Addr, 0x00, r.lm75Temp},
		{ina226Addr, 0x01, r.shunt}, {ina226Addr, 0x02, r.bus}, {ina226Addr, 0x03, r.power}, {ina226Addr, 0x04, r.current},
	} {
		if err := s.WriteWordSwapped(w.addr, w.reg, w.v); err != nil {
			t.Fatal(err)
		}
	}
}

func (r hwmonRegs) want() map[string]int64 {
	return map[string]int64{
		"hwmon/lm75/temp1": r.temp, "hwmon/ina226/in0": r.in0, "hwmon/ina226/in1": r.in1,
		"hwmon/ina226/curr1": r.curr1, "hwmon/ina226/power1": r.power1,
	}
}

// readAll reads every sensor of the selection by ID.
func readAll(m sensors.Matched) (map[string]int64, map[string]error) {
	got, errs := map[string]int64{}, map[string]error{}
	for _, x := range m.Sensors {
		v, err := x.Read()
		if err != nil {
			errs[x.ID()] = err
			continue
		}
		got[x.ID()] = v
	}
	return got, errs
}

// TestHwmonI2CStubOnRealKernel: registers the test writes into an LM75 and
// an INA226 emulated by i2c-stub are read by the kernel's lm75 and ina2xx
// drivers and by this package through hwmon, and come out as the values the
// datasheets give them, in the documented units; values written while the
// drivers are bound are the next readings.
func TestHwmonI2CStubOnRealKernel(t *testing.T) {
	s := sensorstest.RequireI2CStub(t)
	hwmonCases[0].write(t, s)
	s.BindChips(t)
	m, err := sensors.NewFS("", "").Match([]string{"hwmon/lm75/*", "hwmon/ina226/*"})
	if err != nil {
		t.Fatal(err)
	}
	defer sensors.CloseAll(m.Sensors)
	for i, c := range hwmonCases {
		c.write(t, s)
		got, errs := readAll(m)
		for id, want := range c.want() {
			if v, ok := got[id]; !ok || v != want || errs[id] != nil {
				t.Errorf("case %d: %s = %d (read: %v, error %v), want %d", i, id, v, ok, errs[id], want)
			} else {
				t.Logf("case %d: %s = %d as written", i, id, v)
			}
		}
	}
	for _, x := range m.Sensors {
		if x.Source == "hwmon" && x.Kind == 0 {
			t.Errorf("%s has no kind", x.ID())
		}
	}
}

// TestHwmonChipRemovedOnRealKernel: the LM75 deleted from the bus while its
// sensor is open is one read error naming the device's absence (ENODEV on
// the open attribute, then ENOENT), the INA226 beside it keeps reading, and
// a listing after the chip is added again reads it again.
func TestHwmonChipRemovedOnRealKernel(t *testing.T) {
	s := sensorstest.RequireI2CStub(t)
	c := hwmonCases[0]
	c.write(t, s)
	s.BindChips(t)
	sel := sensors.NewSelection(func() (sensors.Matched, error) {
		return sensors.NewFS("", "").Match([]string{"hwmon/lm75/*", "hwmon/ina226/*"})
	}, time.Now)
	defer sel.Close()
	if err := sel.Scan(); err != nil {
		t.Fatal(err)
	}
	got, errs := readAll(sel.Matched)
	if len(errs) > 0 || got["hwmon/lm75/temp1"] != c.temp {
		t.Fatalf("before: %v, errors %v", got, errs)
	}
	if err := s.DeleteDevice(lm75Addr); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		got, errs = readAll(sel.Matched)
		err := errs["hwmon/lm75/temp1"]
		t.Logf("read %d with the LM75 gone: %v", i, err)
		if err == nil || !(errors.Is(err, syscall.ENODEV) || errors.Is(err, fs.ErrNotExist)) {
			t.Errorf("read %d with the LM75 gone: %v, want ENODEV or ENOENT", i, err)
		}
		if got["hwmon/ina226/power1"] != c.power1 || errs["hwmon/ina226/power1"] != nil {
			t.Errorf("the INA226 beside it: %d, %v", got["hwmon/ina226/power1"], errs["hwmon/ina226/power1"])
		}
	}
	if err := sel.Scan(); err != nil {
		t.Fatal(err)
	}
	if _, ok := readAllIDs(sel.Matched)["hwmon/lm75/temp1"]; ok {
		t.Error("a listing without the LM75 still has it")
	}
	if err := s.NewDevice("lm75", lm75Addr); err != nil {
		t.Fatal(err)
	}
	if err := sel.Scan(); err != nil {
		t.Fatal(err)
	}
	got, errs = readAll(sel.Matched)
	if got["hwmon/lm75/temp1"] != c.temp || len(errs) > 0 {
		t.Errorf("the LM75 added again: %v, errors %v", got, errs)
	}
}

func readAllIDs(m sensors.Matched) map[string]bool {
	ids := map[string]bool{}
	for _, x := range m.Sensors {
		ids[x.ID()] = true
	}
	return ids
}

// TestThermalZonesOnRealKernel lists the guest kernel's thermal zones and
// reads each; it says which there are, or why there are none.
func TestThermalZonesOnRealKernel(t *testing.T) {
	if os.Getenv("MONAGENT_GUEST") == "" {
		t.Skip("lists the thermal zones of the rig's guests (MONAGENT_GUEST)")
	}
	zones, err := sensors.NewFS("", "").Thermal()
	if err != nil {
		t.Fatal(err)
	}
	defer sensors.CloseAll(zones)
	if len(zones) == 0 {
		ents, _ := os.ReadDir("/sys/class/thermal")
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Skipf("the %s guest's kernel has no thermal zone (/sys/class/thermal: %v): QEMU's machine describes none (no ACPI _TZ, no thermal-zones node in the device tree) and Debian's kernel lacks CONFIG_THERMAL_EMULATION", os.Getenv("MONAGENT_GUEST"), names)
	}
	for _, z := range zones {
		v, err := z.Read()
		if err != nil {
			t.Errorf("%s: %v", z.ID(), err)
			continue
		}
		t.Logf("%s = %d µ°C", z.ID(), v)
	}
}
