package sensors

import (
	"os"
	"path/filepath"
	"strings"
)

type hwmonType struct {
	prefix string
	kind   Kind
	mult   int64
}

// hwmonTypes maps hwmon attribute prefixes to kinds and the multiplier from
// the sysfs unit to ours (sysfs-interface.rst: m°C, mV, mA, µW, µJ, rpm, m%RH).
var hwmonTypes = []hwmonType{
	{"temp", KindTemperature, 1_000},
	{"in", KindVoltage, 1_000_000},
	{"curr", KindCurrent, 1_000_000},
	{"power", KindPower, 1},
	{"energy", KindEnergy, 1},
	{"fan", KindFan, 1},
	{"humidity", KindHumidity, 1},
}

// Hwmon finds every value of every hwmon chip under class/hwmon: one Sensor
// per <type><n>_input (power<n>_average where a driver has no _input).
func (fs FS) Hwmon() ([]*Sensor, error) {
	return fs.classSensors("hwmon", "hwmon", appendHwmonChip)
}

// classSensors finds the sensors of every device of class/<class> whose name
// starts with prefix, appending each device's to the list with add.
func (fs FS) classSensors(class, prefix string, add func(out []*Sensor, dir string) []*Sensor) ([]*Sensor, error) {
	dirs, err := dirsMatching(filepath.Join(fs.Sys, "class", class), prefix)
	if err != nil {
		return nil, err
	}
	var out []*Sensor
	for _, d := range dirs {
		out = add(out, d)
	}
	return out, nil
}

// appendHwmonChip appends the values of the hwmon chip at chip.
func appendHwmonChip(out []*Sensor, chip string) []*Sensor {
	name, _ := readString(filepath.Join(chip, "name"))
	dir := chip
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out // a chip that vanished meanwhile
	}
	if !hasInputs(ents) {
		// Drivers of old put their attributes beside the device.
		dir = filepath.Join(chip, "device")
		if ents, err = os.ReadDir(dir); err != nil {
			return out
		}
		if name == "" {
			name, _ = readString(filepath.Join(dir, "name"))
		}
	}
	if name == "" {
		name = filepath.Base(chip)
	}
	names, have := entryNames(ents)
	for _, n := range names {
		ch, ok := strings.CutSuffix(n, "_input")
		if !ok {
			ch, ok = strings.CutSuffix(n, "_average")
			if !ok || !strings.HasPrefix(ch, "power") || have[ch+"_input"] {
				continue
			}
		}
		t, ok := matchHwmon(ch)
		if !ok {
			continue
		}
		label, _ := readString(filepath.Join(dir, ch+"_label"))
		out = append(out, &Sensor{Source: "hwmon", Device: name, Node: filepath.Base(chip), Path: filepath.Join(dir, n), Name: ch, Label: label,
			Kind: t.kind, exact: t.mult})
	}
	return out
}

func hasInputs(ents []os.DirEntry) bool {
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), "_input") {
			return true
		}
	}
	return false
}

// matchHwmon matches a channel name, <prefix><digits>.
func matchHwmon(ch string) (hwmonType, bool) {
	for _, t := range hwmonTypes {
		if rest, ok := strings.CutPrefix(ch, t.prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			return t, true
		}
	}
	return hwmonType{}, false
}

// Thermal finds every thermal zone under class/thermal: its temp attribute
// (m°C), named by its type.
func (fs FS) Thermal() ([]*Sensor, error) {
	return fs.classSensors("thermal", "thermal_zone", func(out []*Sensor, z string) []*Sensor {
		if _, err := os.Stat(filepath.Join(z, "temp")); err != nil {
			return out
		}
		typ, _ := readString(filepath.Join(z, "type"))
		if typ == "" {
			typ = filepath.Base(z)
		}
		return append(out, &Sensor{Source: "thermal", Device: filepath.Base(z), Node: filepath.Base(z), Path: filepath.Join(z, "temp"), Name: typ,
			Kind: KindTemperature, exact: 1_000})
	})
}
