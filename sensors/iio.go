package sensors

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// iioTypes are the IIO channel types read, with the kind and the factor from
// the ABI's unit after scale (mV, mA, m°C, mW) to ours.
var iioTypes = map[string]struct {
	kind Kind
	mult float64
}{
	"voltage": {KindVoltage, 1e6},
	"current": {KindCurrent, 1e6},
	"temp":    {KindTemperature, 1e3},
	"power":   {KindPower, 1e3},
}

// IIODevice is an IIO device's directory and name.
type IIODevice struct {
	Dir  string // /sys/bus/iio/devices/iio:deviceN
	Node string // iio:deviceN, the name of its character device in /dev
	Name string
}

// IIODevices lists the IIO devices.
func (fs FS) IIODevices() ([]IIODevice, error) {
	dirs, err := dirsMatching(filepath.Join(fs.Sys, "bus", "iio", "devices"), "iio:device")
	if err != nil {
		return nil, err
	}
	out := make([]IIODevice, 0, len(dirs))
	for _, d := range dirs {
		name, _ := readString(filepath.Join(d, "name"))
		out = append(out, IIODevice{Dir: d, Node: filepath.Base(d), Name: name})
	}
	return out, nil
}

// IIO finds the one-shot channels of every IIO device: each in_<channel>_raw
// of a voltage, current, temperature or power channel, with its scale and
// offset (the channel's own, else the type's shared one), and each processed
// in_<channel>_input that has no raw attribute beside it.
func (fs FS) IIO() ([]*Sensor, error) {
	devs, err := fs.IIODevices()
	if err != nil {
		return nil, err
	}
	var out []*Sensor
	for _, d := range devs {
		ss, err := iioChannels(d)
		if err != nil {
			return out, err
		}
		out = append(out, ss...)
	}
	return out, nil
}

func iioChannels(d IIODevice) ([]*Sensor, error) {
	ents, err := os.ReadDir(d.Dir)
	if err != nil {
		return nil, fmt.Errorf("sensors: %w", err)
	}
	names, have := entryNames(ents)
	var out []*Sensor
	for _, n := range names {
		ch, processed := "", false
		if c, ok := strings.CutPrefix(n, "in_"); ok {
			if c, ok := strings.CutSuffix(c, "_raw"); ok {
				ch = c
			} else if c, ok := strings.CutSuffix(c, "_input"); ok && !have["in_"+c+"_raw"] {
				ch, processed = c, true
			}
		}
		if ch == "" {
			continue
		}
		typ := iioType(ch)
		t, ok := iioTypes[typ]
		if !ok {
			continue
		}
		s := &Sensor{Source: "iio", Device: d.Name, Node: d.Node, Path: filepath.Join(d.Dir, n), Name: ch, Kind: t.kind, scale: t.mult}
		if !processed {
			scale, err := iioAttr(d.Dir, ch, typ, "scale", 1)
			if err != nil {
				return out, err
			}
			off, err := iioAttr(d.Dir, ch, typ, "offset", 0)
			if err != nil {
				return out, err
			}
			s.scale, s.offset = scale*t.mult, off
		}
		out = append(out, s)
	}
	return out, nil
}

// iioType is the channel type at the start of a channel spec: voltage of
// voltage0, voltage0-voltage1; temp of temp, temp_ambient.
func iioType(ch string) string {
	i := strings.IndexFunc(ch, func(r rune) bool { return r < 'a' || r > 'z' })
	if i < 0 {
		return ch
	}
	return ch[:i]
}

// iioAttr reads in_<ch>_<attr>, else the shared in_<type>_<attr>, else def.
func iioAttr(dir, ch, typ, attr string, def float64) (float64, error) {
	for _, n := range []string{"in_" + ch + "_" + attr, "in_" + typ + "_" + attr} {
		p := filepath.Join(dir, n)
		s, err := readString(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("sensors: %s: %q is not a number", p, s)
		}
		return v, nil
	}
	return def, nil
}

// NoDeviceError is an IIO device that FindIIODevice did not find.
type NoDeviceError struct {
	Device  string // the name or node asked for
	Sys     string // the sysfs root looked under
	Devices int    // how many IIO devices there are
}

func (e *NoDeviceError) Error() string {
	return fmt.Sprintf("no IIO device %q under %s (%d devices)", e.Device, e.Sys, e.Devices)
}

// FindIIODevice returns the IIO device of that name (TI-am335x-adc.0.auto)
// or node (iio:device0), the first in IIODevices' order; a device not
// there is a *NoDeviceError, and a listing that fails is IIODevices' error.
func (fs FS) FindIIODevice(device string) (IIODevice, error) {
	devs, err := fs.IIODevices()
	if err != nil {
		return IIODevice{}, err
	}
	for _, d := range devs {
		if d.Name == device || d.Node == device {
			return d, nil
		}
	}
	return IIODevice{}, &NoDeviceError{Device: device, Sys: fs.Sys, Devices: len(devs)}
}
