package inventory

import "path/filepath"

// DeviceProbe is a device node or sysfs device with its name.
type DeviceProbe struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// Why the sensor lists are empty.
const (
	absentIIO     = "no /sys/bus/iio/devices/iio:device*"
	absentHwmon   = "no /sys/class/hwmon/hwmon*"
	absentThermal = "no /sys/class/thermal/thermal_zone*"
)

// probeDevices lists the sysfs devices matching pattern, each named by the
// content of its file nameFile.
func probeDevices(pattern, nameFile string) []DeviceProbe {
	out := []DeviceProbe{}
	for _, d := range glob(pattern) {
		out = append(out, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, nameFile))})
	}
	return out
}

// probeSensors lists the IIO devices, hwmon chips and thermal zones.
func probeSensors(sys string) (iio, hwmon, thermal []DeviceProbe) {
	return probeDevices(filepath.Join(sys, "bus", "iio", "devices", "iio:device*"), "name"),
		probeDevices(filepath.Join(sys, "class", "hwmon", "hwmon*"), "name"),
		probeDevices(filepath.Join(sys, "class", "thermal", "thermal_zone*"), "type")
}

func (inv *Inventory) writeSensors(pf func(string, ...any)) {
	devices := func(title, absent string, ds []DeviceProbe) {
		pf("\n%s:\n", title)
		if len(ds) == 0 {
			pf("  absent: %s\n", absent)
		}
		for _, d := range ds {
			pf("  %s %s\n", d.Path, d.Name)
		}
	}
	devices("IIO devices", inv.Absent.IIO, inv.IIO)
	devices("hwmon chips", inv.Absent.Hwmon, inv.Hwmon)
	devices("Thermal zones", inv.Absent.Thermal, inv.Thermal)
}
