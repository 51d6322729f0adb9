// Package inventory says what monagent can measure on a machine, for
// `monagent probe`: the system clocks and the kernel's clock discipline
// (adjtimex), the PTP hardware clocks with their caps, pins and a trial
// reading, what each network interface can timestamp in hardware (sockts'
// verdict, Timestamping.Hardware), GPIO chips and their lines, PPS devices and
// the edges they capture, IIO devices, hwmon chips and thermal zones, the time
// daemons' control sockets, and whether the configured InfluxDB takes the
// token.
//
// Whatever is missing is listed as absent with the reason, never an error:
// the inventory of a laptop is mostly absences. The JSON says what the text
// says: an empty list is [] with its reason under "absent", a PHC without pins
// says why in pins_absent, a kernel without a TAI offset has tai_utc_note.
//
// Every sysfs and /dev path is under the roots of Paths, so tests run on
// fixture trees; the device readers and the ethtool query are functions of Env
// that tests replace.
//
// It reads and opens, and changes nothing: no clock is set, no line or PPS
// edge is requested beyond reading its information, and hardware timestamping
// is not switched on. The agent does not use it; a source that needs a device
// opens it through its own package (phc, gpio, sensors).
package inventory
