package sensors

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
)

// ID is the sensor's "source/device/name" (hwmon/ina226/power1), what a
// pattern of Match names.
func (s *Sensor) ID() string { return s.Source + "/" + s.Device + "/" + s.Name }

// CheckPattern checks a "source/device/name" pattern of Match: three parts,
// each in path.Match's syntax (an error wrapping path.ErrBadPattern), and a
// source without wildcards that is hwmon, thermal or iio.
func CheckPattern(pat string) error {
	parts := strings.Split(pat, "/")
	if len(parts) != 3 {
		return errors.New("want source/device/name (e.g. hwmon/ina226/*)")
	}
	for _, s := range parts {
		if _, err := path.Match(s, ""); err != nil {
			return err
		}
	}
	if src := parts[0]; !strings.ContainsAny(src, "*?[\\") && src != "hwmon" && src != "thermal" && src != "iio" {
		return fmt.Errorf("source %q: want hwmon, thermal or iio", src)
	}
	return nil
}

// Matched is the sensors a list of patterns selects.
type Matched struct {
	Sensors []*Sensor // sorted by ID
	// Keys name each sensor uniquely: its ID, or source/device@node/name
	// where two sensors share an ID (two chips of one name).
	Keys []string
	// Failed is the sources that could not be listed.
	Failed int
}

// Match lists the sensors whose ID matches one of patterns (path.Match,
// checked by CheckPattern), listing only the sources (hwmon, thermal, iio)
// a pattern's source can match, and closes the others. A source that fails
// to list is counted in Failed and its error joined in the error returned;
// whatever it did list, and the other sources' sensors, are still matched.
func (fs FS) Match(patterns []string) (Matched, error) {
	var m Matched
	has := func(src string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { return matchesSource(p, src) })
	}
	found, failed, err := fs.List(Trees{Hwmon: has("hwmon"), Thermal: has("thermal"), IIO: has("iio")},
		func(x *Sensor) bool { return x.Matches(patterns) })
	m.Sensors, m.Failed = found, failed
	slices.SortStableFunc(m.Sensors, func(a, b *Sensor) int { return strings.Compare(a.ID(), b.ID()) })
	count := map[string]int{}
	for _, x := range m.Sensors {
		count[x.ID()]++
	}
	for _, x := range m.Sensors {
		k := x.ID()
		if count[k] > 1 {
			k = x.Source + "/" + x.Device + "@" + x.Node + "/" + x.Name
		}
		m.Keys = append(m.Keys, k)
	}
	return m, err
}

// matchesSource says whether pattern p can match a sensor of source.
func matchesSource(p, source string) bool {
	src, _, _ := strings.Cut(p, "/")
	ok, _ := path.Match(src, source)
	return ok
}
