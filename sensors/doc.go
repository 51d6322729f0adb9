// Package sensors reads the board's physical sensors through sysfs: hwmon
// chips (Documentation/hwmon/sysfs-interface.rst: temperatures, voltages,
// currents, power, energy, fans, humidity), thermal zones
// (Documentation/ABI/testing/sysfs-class-thermal) and IIO ADCs
// (Documentation/ABI/testing/sysfs-bus-iio), one-shot through the *_raw
// attributes or buffered through the character device /dev/iio:deviceN,
// whose records it decodes with the channels' scan element types into
// scans: the values in their kinds' units, the kernel's timestamp, and the
// time the record's read gives it (for a device without a timestamp
// channel).
//
// Every path goes through FS, whose roots default to /sys and /dev, so tests
// run against fixture trees. Values are int64 in fixed units converted at the
// edge (µ°C, nV, nA, µW, µJ, rpm, m%RH); a sensor keeps its attribute file
// open and re-reads it in place (pread at offset 0, which sysfs regenerates),
// so a reading allocates nothing.
//
// FS.Match selects sensors by "source/device/name" patterns (hwmon/ina226/*),
// the names a configuration uses.
//
// It does not configure drivers (sampling rates, triggers) beyond enabling a
// buffer's scan elements; that is the board's device tree's business.
package sensors
