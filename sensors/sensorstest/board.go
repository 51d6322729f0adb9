package sensorstest

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
)

// boardSys is a BeagleBone-like sysfs: an INA226 power monitor, a CPU
// temperature chip, an old-style hwmon driver with its attributes beside the
// device, two thermal zones (one the driver cannot read), the AM335x's ADC
// with a buffer and a pressure sensor with a processed temperature. (Built
// by the tests: sysfs names hold colons, which module zips refuse.)
var boardSys = map[string]string{
	"class/hwmon/hwmon0/name":                  "ina226\n",
	"class/hwmon/hwmon0/in1_input":             "5012\n",
	"class/hwmon/hwmon0/in1_label":             "vbus\n",
	"class/hwmon/hwmon0/curr1_input":           "412\n",
	"class/hwmon/hwmon0/power1_input":          "2065000\n",
	"class/hwmon/hwmon0/update_interval":       "1\n",
	"class/hwmon/hwmon10/name":                 "tmp102\n",
	"class/hwmon/hwmon10/temp1_input":          "-5250\n",
	"class/hwmon/hwmon1/name":                  "cpu_thermal\n",
	"class/hwmon/hwmon1/temp1_input":           "48250\n",
	"class/hwmon/hwmon1/temp1_label":           "cpu\n",
	"class/hwmon/hwmon1/temp10_input":          "51000\n",
	"class/hwmon/hwmon1/temp2_input":           "49000\n",
	"class/hwmon/hwmon2/device/name":           "gpio-fan\n",
	"class/hwmon/hwmon2/device/fan1_input":     "3150\n",
	"class/hwmon/hwmon2/device/power1_average": "750000\n",
	"class/thermal/thermal_zone0/type":         "cpu_thermal\n",
	"class/thermal/thermal_zone0/temp":         "47500\n",
	"class/thermal/thermal_zone1/type":         "gpu_thermal\n",
	"class/thermal/thermal_zone1/temp":         "N/A\n",
	"class/thermal/cooling_device0/type":       "fan\n",

	"bus/iio/devices/iio:device0/name":                             "TI-am335x-adc.0.auto\n",
	"bus/iio/devices/iio:device0/in_voltage0_raw":                  "2048\n",
	"bus/iio/devices/iio:device0/in_voltage1_raw":                  "4095\n",
	"bus/iio/devices/iio:device0/in_voltage_scale":                 "0.439453125\n",
	"bus/iio/devices/iio:device0/current_timestamp_clock":          "monotonic_raw\n",
	"bus/iio/devices/iio:device0/buffer/enable":                    "0\n",
	"bus/iio/devices/iio:device0/buffer/length":                    "2\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage0_en":     "0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage0_index":  "0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage0_type":   "le:u12/16>>0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage1_en":     "0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage1_index":  "1\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage1_type":   "le:u12/16>>0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage7_en":     "1\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage7_index":  "7\n",
	"bus/iio/devices/iio:device0/scan_elements/in_voltage7_type":   "le:u12/16>>0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_timestamp_en":    "0\n",
	"bus/iio/devices/iio:device0/scan_elements/in_timestamp_index": "8\n",
	"bus/iio/devices/iio:device0/scan_elements/in_timestamp_type":  "le:s64/64>>0\n",
	"bus/iio/devices/iio:device1/name":                             "bmp280\n",
	"bus/iio/devices/iio:device1/in_temp_input":                    "23450\n",
	"bus/iio/devices/iio:device1/in_pressure_input":                "101.325\n",
}

// ADCRecords are three records of voltage0, voltage1 and the timestamp as
// the kernel lays them out (u16, u16, 4 bytes of padding, s64): raw 2048/4095
// at t, 0/1 at t+10 ms, 4095/2047 at t+20 ms, t = 1,700,000,000 s.
const ADCRecords = "0008ff0f0000000000002a36fe9c9717" + "00000100000000008096c236fe9c9717" + "ff0fff0700000000002d5b37fe9c9717"

// Board writes the fixture tree and the ADC's character device (a file of
// the ADCRecords) into a temporary directory and returns the sysfs and /dev
// roots.
func Board(t testing.TB) (sys, dev string) {
	t.Helper()
	root := t.TempDir()
	for p, v := range boardSys {
		p = filepath.Join(root, "sys", p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := hex.DecodeString(ADCRecords)
	if err := os.MkdirAll(filepath.Join(root, "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "dev", "iio:device0"), recs, 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, "sys"), filepath.Join(root, "dev")
}

// ADCRecordsUnstamped are ADCRecords' three samples as an ADC without a
// timestamp channel lays them out (u16, u16).
const ADCRecordsUnstamped = "0008ff0f" + "00000100" + "ff0fff07"

// BoardWithoutTimestamp is Board with an ADC that has no timestamp channel
// (a driver without IIO_CHAN_SOFT_TIMESTAMP): no in_timestamp scan element,
// and a character device of ADCRecordsUnstamped.
func BoardWithoutTimestamp(t testing.TB) (sys, dev string) {
	t.Helper()
	sys, dev = Board(t)
	scan := filepath.Join(sys, "bus", "iio", "devices", "iio:device0", "scan_elements")
	for _, a := range []string{"en", "index", "type"} {
		if err := os.Remove(filepath.Join(scan, "in_timestamp_"+a)); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := hex.DecodeString(ADCRecordsUnstamped)
	if err := os.WriteFile(filepath.Join(dev, "iio:device0"), recs, 0o644); err != nil {
		t.Fatal(err)
	}
	return sys, dev
}
