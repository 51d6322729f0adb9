package phc

import (
	"errors"
	"reflect"
	"testing"
)

func TestSelect(t *testing.T) {
	p := Paths{Sys: "/sys", Dev: "/devx"}
	discover := func(got Paths) ([]Info, error) {
		if got != p {
			t.Errorf("discover under %v", got)
		}
		return []Info{{Index: 0, Device: "/devx/ptp0", Name: "cpts"}, {Index: 2, Device: "/devx/ptp2", Name: "e1000e"}}, nil
	}
	errNoDev := errors.New("no such device")
	iface := func(name string) (int, error) {
		switch name {
		case "eth0":
			return 2, nil
		case "lo":
			return -1, nil
		}
		return -1, errNoDev
	}
	for _, tc := range []struct {
		name                string
		devices, interfaces []string
		want                []string
		err                 string
	}{
		{"every PHC found", nil, nil, []string{"/devx/ptp0", "/devx/ptp2"}, ""},
		{"a device and its interface", []string{"/devx/ptp2", "/devx/ptp7"}, []string{"eth0"}, []string{"/devx/ptp2", "/devx/ptp7"}, ""},
		{"an interface", nil, []string{"eth0"}, []string{"/devx/ptp2"}, ""},
		{"no PHC", nil, []string{"eth0", "lo"}, nil, "interface lo has no PTP hardware clock"},
		{"no interface", []string{"/devx/ptp0"}, []string{"eth9"}, nil, "no such device"},
	} {
		infos, err := Select(p, tc.devices, tc.interfaces, discover, iface)
		var got []string
		for _, in := range infos {
			got = append(got, in.Device)
			if want := map[string]string{"/devx/ptp0": "cpts", "/devx/ptp2": "e1000e"}[in.Device]; in.Name != want {
				t.Errorf("%s: %s named %q", tc.name, in.Device, in.Name)
			}
		}
		var ie *InterfaceError
		if tc.err != "" && (!errors.As(err, &ie) || ie.Error() != tc.err || ie.Index != len(tc.interfaces)-1) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(got, tc.want) || (tc.err == "") != (err == nil) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
}

// CPSW's two ports share one PHC; a device and its interface name one too.
func TestSharedPHCs(t *testing.T) {
	infos := []Info{{Device: "/dev/ptp0", Interfaces: []string{"eth0", "eth1"}}, {Device: "/dev/ptp1", Interfaces: []string{"eth2"}}}
	for _, tc := range []struct {
		name                string
		devices, interfaces []string
		want                []Shared
	}{
		{"device and its interface", []string{"/dev/ptp0/"}, []string{"eth0"}, []Shared{{Interface: 0, Device: "/dev/ptp0", By: 0, ByDevice: true}}},
		{"two ports of one NIC", nil, []string{"eth2", "eth0", "eth1"}, []Shared{{Interface: 2, Device: "/dev/ptp0", By: 1}}},
		{"one each, one unknown, one twice", []string{""}, []string{"eth0", "eth2", "eth9", "eth0"}, nil},
	} {
		if got := SharedPHCs(infos, tc.devices, tc.interfaces); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestMaySelect(t *testing.T) {
	for _, tc := range []struct {
		devices, interfaces []string
		want                bool
	}{
		{nil, nil, true}, {[]string{"/dev/ptp0/"}, nil, true}, {[]string{"/dev/ptp1"}, nil, false}, {[]string{"/dev/ptp1"}, []string{"eth0"}, true},
	} {
		if got := MaySelect(tc.devices, tc.interfaces, "/dev/ptp0"); got != tc.want {
			t.Errorf("devices %v, interfaces %v: %v", tc.devices, tc.interfaces, got)
		}
	}
}
