package sensors

import (
	"errors"
	"path"
)

// Trees selects the sysfs trees List reads.
type Trees struct{ Hwmon, Thermal, IIO bool }

// List finds the sensors of the selected trees that keep accepts (nil keeps
// every one), closing the others. A tree that cannot be listed is one error
// of the joined error, counted in failed; the others' sensors are returned.
func (fs FS) List(trees Trees, keep func(*Sensor) bool) (found []*Sensor, failed int, err error) {
	var errs []error
	for _, t := range []struct {
		on   bool
		find func() ([]*Sensor, error)
	}{{trees.Hwmon, fs.Hwmon}, {trees.Thermal, fs.Thermal}, {trees.IIO, fs.IIO}} {
		if !t.on {
			continue
		}
		ss, err := t.find()
		if err != nil {
			failed++
			errs = append(errs, err) // keep what the others found
		}
		for _, s := range ss {
			if keep != nil && !keep(s) {
				s.Close()
				continue
			}
			found = append(found, s)
		}
	}
	return found, failed, errors.Join(errs...)
}

// Matches says whether the sensor's ID matches one of the patterns
// (path.Match: "hwmon/ina226/*", "iio/*/voltage[0-3]"); a malformed pattern
// matches nothing (CheckPattern).
func (s *Sensor) Matches(patterns []string) bool {
	id := s.ID()
	for _, p := range patterns {
		if ok, _ := path.Match(p, id); ok {
			return true
		}
	}
	return false
}

// CheckGlob is the error of a malformed selection pattern (path.Match's
// syntax), nil for a good one; CheckPattern checks a trigger's stricter one.
func CheckGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

// SharedDevices says of each sensor whether another of its source and
// device name sits on another sysfs node (two NVMe drives, two INA226): its
// node tells them apart. A unique name goes without it, so that its series
// survive a reboot that numbers the nodes differently.
func SharedDevices(ss []*Sensor) []bool {
	type chip struct{ source, device string }
	first := map[chip]string{} // the first node of each chip name
	shared := map[chip]bool{}
	for _, s := range ss {
		k := chip{s.Source, s.Device}
		if n, ok := first[k]; !ok {
			first[k] = s.Node
		} else if n != s.Node {
			shared[k] = true
		}
	}
	out := make([]bool, len(ss))
	for i, s := range ss {
		out[i] = shared[chip{s.Source, s.Device}]
	}
	return out
}
