package sensors

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestList: the selected trees' sensors that keep accepts, in the trees'
// order; a tree that cannot be listed is counted and named, the others'
// sensors kept.
func TestList(t *testing.T) {
	fs := board(t)
	ids := func(ss []*Sensor) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID())
		}
		CloseAll(ss)
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		trees    Trees
		patterns []string
		want     string
	}{
		{Trees{Thermal: true}, nil, "thermal/thermal_zone0/cpu_thermal thermal/thermal_zone1/gpu_thermal"},
		{Trees{Hwmon: true, IIO: true}, []string{"hwmon/ina226/*", "iio/*/voltage[0-0]"},
			"hwmon/ina226/curr1 hwmon/ina226/in1 hwmon/ina226/power1 iio/TI-am335x-adc.0.auto/voltage0"},
		{Trees{Hwmon: true, Thermal: true, IIO: true}, []string{"thermal/*/gpu*", "iio/bmp280/temp"},
			"thermal/thermal_zone1/gpu_thermal iio/bmp280/temp"},
		{Trees{}, nil, ""},
	} {
		var keep func(*Sensor) bool
		if tc.patterns != nil {
			keep = func(s *Sensor) bool { return s.Matches(tc.patterns) }
		}
		found, failed, err := fs.List(tc.trees, keep)
		if got := ids(found); got != tc.want || failed != 0 || err != nil {
			t.Errorf("%+v %v: %q, %d failed, %v; want %q", tc.trees, tc.patterns, got, failed, err, tc.want)
		}
	}
	bad := NewFS(filepath.Join(fs.Sys, "class", "hwmon", "hwmon0", "name"), fs.Dev) // a file where trees should be
	found, failed, err := bad.List(Trees{Hwmon: true, Thermal: true}, nil)
	if len(found) != 0 || failed != 2 || err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("unreadable trees: %d sensors, %d failed, %v", len(found), failed, err)
	}
}

func TestMatchesAndCheckGlob(t *testing.T) {
	s := &Sensor{Source: "hwmon", Device: "ina226", Name: "power1"}
	for _, tc := range []struct {
		patterns []string
		want     bool
	}{
		{[]string{"hwmon/ina226/*"}, true},
		{[]string{"iio/*/*", "*/*/power[0-9]"}, true},
		{[]string{"hwmon/ina226"}, false},
		{[]string{"hwmon/[/*"}, false}, // malformed
		{nil, false},
	} {
		if got := s.Matches(tc.patterns); got != tc.want {
			t.Errorf("%v: %v, want %v", tc.patterns, got, tc.want)
		}
	}
	if CheckGlob("hwmon/*/temp[1-3]") != nil || CheckGlob("hwmon/[") == nil {
		t.Error("CheckPattern")
	}
}

func TestSharedDevices(t *testing.T) {
	ss := []*Sensor{
		{Source: "hwmon", Device: "nvme", Node: "hwmon3", Name: "temp1"},
		{Source: "hwmon", Device: "nvme", Node: "hwmon3", Name: "temp2"},
		{Source: "hwmon", Device: "ina226", Node: "hwmon0", Name: "in1"},
		{Source: "hwmon", Device: "nvme", Node: "hwmon4", Name: "temp1"},
		{Source: "thermal", Device: "ina226", Node: "thermal_zone0", Name: "ina226"},
	}
	if got := fmt.Sprint(SharedDevices(ss)); got != "[true true false true false]" {
		t.Errorf("shared %s", got)
	}
}
