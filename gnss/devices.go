package gnss

// DefaultMaxDevices is how many receivers a client follows by default: a
// time monitor has one or two; gpsd names each by its path, and a gpsd (or
// anything on its port) that sends ever new names would otherwise grow
// every table kept per device (200,000 names: 139 MiB of heap).
const DefaultMaxDevices = 8

// Devices is a capped set of device names: the first Max names seen are
// admitted, for good; a message naming any other is refused and counted.
// What a client keeps per device (series, judged clocks, a Referee's
// state) then never outgrows Max. Not safe for concurrent use.
type Devices struct {
	max     int
	names   map[string]struct{}
	refused uint64
}

// NewDevices admits up to n names (at least 1).
func NewDevices(n int) *Devices {
	return &Devices{max: max(n, 1), names: map[string]struct{}{}}
}

// Admit says whether a message of device is taken: its name is admitted
// already, or there is room for it (and it is admitted now). A refusal is
// counted.
func (d *Devices) Admit(device string) bool {
	if _, ok := d.names[device]; ok {
		return true
	}
	if len(d.names) >= d.max {
		d.refused++
		return false
	}
	d.names[device] = struct{}{}
	return true
}

// Len is how many names are admitted; Refused how many messages were not.
func (d *Devices) Len() int        { return len(d.names) }
func (d *Devices) Refused() uint64 { return d.refused }
