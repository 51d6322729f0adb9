package guest

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The sensor modules built beside gpio-sim for the amd64 guest, none of
// which Debian builds: the IIO configfs core (CONFIG_IIO_CONFIGFS,
// CONFIG_IIO_SW_DEVICE, CONFIG_IIO_SW_TRIGGER), the hrtimer trigger
// (CONFIG_IIO_HRTIMER_TRIGGER), iio_simple_dummy with its buffer
// (CONFIG_IIO_SIMPLE_DUMMY, CONFIG_IIO_SIMPLE_DUMMY_BUFFER; without events,
// whose generator needs IRQ_SIM) and the INA2xx power monitors' hwmon driver
// (CONFIG_SENSORS_INA2XX). Debian builds the rest (industrialio,
// industrialio-triggered-buffer, kfifo_buf, i2c-stub, i2c-dev, lm75).
//
// Edits make the IIO path countable from user space, so that a test can
// account for every scan (module parameters under
// /sys/module/<module>/parameters):
//   - iio-trig-hrtimer counts its polls (fired), the periods its timer
//     skipped because its callback ran late (overruns), and the polls it
//     did not pass on because the consumer had not finished the last one
//     (busy: iio_trigger_poll would have done nothing while use_count is
//     set; checking it here, the only place that sets it, makes the count
//     exact);
//   - iio_dummy counts its trigger handler's runs (runs) and the scans it
//     pushes (scans), and pushes burst scans a run (burst, writable, 1 by
//     default), each with its own kernel timestamp, the way an ADC's
//     driver empties its hardware FIFO; each scan's accel_x element is the
//     scan count modulo 2^16 instead of a constant, so that a scan the
//     buffer dropped is a gap in the sequence.
//
// Then scans = runs × burst, scans = scans read + gaps, and fired = runs +
// busy + polls the IIO core dropped otherwise (a consumer's interrupt
// masked, a wake-up of its thread merged).

// iioKOs are the IIO modules in the order they load (each after what it
// needs); sensorKOs add the INA2xx driver.
var (
	iioKOs    = []string{"industrialio-configfs.ko", "industrialio-sw-device.ko", "industrialio-sw-trigger.ko", "iio-trig-hrtimer.ko", "iio_dummy.ko"}
	sensorKOs = append(slices.Clip(iioKOs), "ina2xx.ko")
)

const (
	iioKbuildObjs    = "industrialio-configfs.o industrialio-sw-device.o industrialio-sw-trigger.o iio-trig-hrtimer.o iio_dummy.o"
	sensorKbuildObjs = iioKbuildObjs + " ina2xx.o"
	iioKbuild        = "iio_dummy-y := iio_simple_dummy.o iio_simple_dummy_buffer.o\nccflags-y += -DCONFIG_IIO_SIMPLE_DUMMY_BUFFER\n"
)

// SensorKernelModules are the IIO and hwmon modules built beside the gpio-sim
// module BuildGPIOSim returned (or the ARM pps-ktimer BuildPPSKtimerARM
// did), in the order they load, after the kernel's own (IIOKernelDeps,
// HwmonKernelDeps).
func SensorKernelModules(gpioSim string) []string { return beside(gpioSim, sensorKOs) }

func beside(ko string, names []string) []string {
	var out []string
	for _, k := range names {
		out = append(out, filepath.Join(filepath.Dir(ko), k))
	}
	return out
}

// IIOKernelDeps are the kernel's own modules the IIO modules need: configfs,
// the IIO core and its triggered kfifo buffer. HwmonKernelDeps are those
// the hwmon tests need: i2c-dev and lm75, and i2c-stub (loaded with chip
// addresses, I2CStubParams), the kernel's on amd64, built on arm
// (I2CStubModule).
var (
	IIOKernelDeps   = []string{"configfs", "industrialio", "industrialio-triggered-buffer", "kfifo_buf"}
	HwmonKernelDeps = []string{"i2c-dev", "lm75"}
)

// IIOGuestEnv tells the tests in a guest that the IIO dummy and its trigger
// are there; HwmonGuestEnv that i2c-stub's chips are.
var (
	IIOGuestEnv   = "MONAGENT_GUEST_IIO=1"
	HwmonGuestEnv = "MONAGENT_GUEST_I2C_STUB=0x48,0x40"
)

// armNoDeviceTables are the edits that let the modules with device tables
// cross-build for arm: modpost, built for the host by Debian's amd64
// linux-kbuild, sizes the tables' entries for 64 bits (struct
// of_device_id: 200 bytes, not arm's 196; struct i2c_device_id: 32, not 24)
// and refuses them. The tables stay (the drivers match by them); only the
// aliases for autoloading go, which the guest does not use.
var armNoDeviceTables = map[string][]gpioSimEdit{
	"drivers/gpio/gpio-sim.c": {{"MODULE_DEVICE_TABLE(of, gpio_sim_of_match);", ""}},
	"drivers/hwmon/ina2xx.c":  {{"MODULE_DEVICE_TABLE(i2c, ina2xx_id);", ""}, {"MODULE_DEVICE_TABLE(of, ina2xx_of_match);", ""}},
}

// I2CStubModule is i2c-stub.ko and PPSKtimerARMGPIOSim gpio-sim.ko, built
// beside the ARM pps-ktimer module BuildPPSKtimerARM returned (the amd64
// kernel has its own i2c-stub, and BuildGPIOSim builds its gpio-sim).
func I2CStubModule(ppsKtimer string) string {
	return filepath.Join(filepath.Dir(ppsKtimer), "i2c-stub.ko")
}

func PPSKtimerARMGPIOSim(ppsKtimer string) string {
	return filepath.Join(filepath.Dir(ppsKtimer), "gpio-sim.ko")
}

// I2CStubParams are i2c-stub's parameters: two emulated chips, at the LM75's
// address and the INA226's.
const I2CStubParams = "chip_addr=0x48,0x40"

func sensorMembers() []gpioSimMember {
	return []gpioSimMember{
		{src: "drivers/iio/industrialio-configfs.c", dst: "industrialio-configfs.c"},
		{src: "drivers/iio/industrialio-sw-device.c", dst: "industrialio-sw-device.c"},
		{src: "drivers/iio/industrialio-sw-trigger.c", dst: "industrialio-sw-trigger.c"},
		{src: "drivers/iio/trigger/iio-trig-hrtimer.c", dst: "iio-trig-hrtimer.c", edits: []gpioSimEdit{
			{"#define HRTIMER_DEFAULT_SAMPLING_FREQUENCY 100\n", "#define HRTIMER_DEFAULT_SAMPLING_FREQUENCY 100\n" +
				cModuleParams("static unsigned long fired, overruns, busy;", "fired ulong 0444", "overruns ulong 0444", "busy ulong 0444")},
			{"\thrtimer_forward_now(timer, info->period);\n\tiio_trigger_poll(info->swt.trigger);\n",
				"\toverruns += hrtimer_forward_now(timer, info->period) - 1;\n" +
					"\tfired++;\n" +
					"\tif (atomic_read(&info->swt.trigger->use_count))\n\t\tbusy++;\n" +
					"\telse\n\t\tiio_trigger_poll(info->swt.trigger);\n"},
		}},
		{src: "drivers/iio/dummy/iio_simple_dummy.c", dst: "iio_simple_dummy.c"},
		{src: "drivers/iio/dummy/iio_simple_dummy.h", dst: "iio_simple_dummy.h"},
		{src: "drivers/iio/dummy/iio_simple_dummy_buffer.c", dst: "iio_simple_dummy_buffer.c", edits: []gpioSimEdit{
			{"#include \"iio_simple_dummy.h\"\n", "#include \"iio_simple_dummy.h\"\n" +
				cModuleParams("static unsigned long runs, scans;\nstatic unsigned int burst = 1;", "runs ulong 0444", "scans ulong 0444", "burst uint 0644")},
			{"\tu16 *data;\n\n", "\tu16 *data;\n\tunsigned int k, n = burst;\n\n\truns++;\n"},
			{"\tfor_each_set_bit(j, indio_dev->active_scan_mask, indio_dev->masklength)\n\t\tdata[i++] = fakedata[j];\n\n" +
				"\tiio_push_to_buffers_with_timestamp(indio_dev, data,\n\t\t\t\t\t   iio_get_time_ns(indio_dev));\n",
				"\tfor (k = 0; k < n; k++) {\n" +
					"\t\tscans++;\n" +
					"\t\ti = 0;\n" +
					"\t\tfor_each_set_bit(j, indio_dev->active_scan_mask, indio_dev->masklength)\n" +
					"\t\t\tdata[i++] = j == DUMMY_INDEX_ACCELX ? (u16)scans : fakedata[j];\n" +
					"\t\tiio_push_to_buffers_with_timestamp(indio_dev, data, iio_get_time_ns(indio_dev));\n" +
					"\t}\n"},
		}},
		{src: "drivers/hwmon/ina2xx.c", dst: "ina2xx.c"},
		{src: "drivers/i2c/i2c-stub.c", dst: "i2c-stub.c"}, // built for arm only: armmp lacks it
	}
}

// cModuleParams is C declaring a module's parameters: decls, then a
// module_param(name, type, perm) for each "name type perm".
func cModuleParams(decls string, params ...string) string {
	s := "\n#include <linux/moduleparam.h>\n" + decls + "\n"
	for _, p := range params {
		f := strings.Fields(p)
		s += fmt.Sprintf("module_param(%s, %s, %s);\n", f[0], f[1], f[2])
	}
	return s
}
