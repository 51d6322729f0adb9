package phc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/monagent/monagent/sockts"
)

// Info describes a PHC as sysfs shows it (/sys/class/ptp/ptpN).
type Info struct {
	Index      int      `json:"index"`
	Device     string   `json:"device"`     // /dev/ptpN under the configured dev root
	Name       string   `json:"clock_name"` // driver's clock name, e.g. "e1000e", "cpts"
	MaxAdjPPB  int64    `json:"max_adjustment_ppb"`
	ExtTS      int      `json:"n_external_timestamps"`
	PerOut     int      `json:"n_periodic_outputs"`
	Pins       int      `json:"n_programmable_pins"`
	PPS        bool     `json:"pps_available"`
	Interfaces []string `json:"interfaces"` // network interfaces whose device owns this PHC
}

// InterfacePHC returns the PHC index of a network interface from what it can
// timestamp (sockts.InterfaceTimestamping, ETHTOOL_GET_TS_INFO), or -1 when
// it has none.
func InterfacePHC(iface string) (int, error) {
	ts, err := sockts.InterfaceTimestamping(iface)
	return ts.PHCIndex, err
}

// Paths are the roots of sysfs and /dev, configurable so that tests run on
// fixture trees.
type Paths struct {
	Sys string
	Dev string
}

// DefaultPaths are the real system's.
var DefaultPaths = Paths{Sys: "/sys", Dev: "/dev"}

// Discover lists the PHCs in sysfs with the interfaces they belong to. No
// /sys/class/ptp (no PHC driver loaded) is an empty list, not an error.
func Discover(p Paths) ([]Info, error) {
	dir := filepath.Join(p.Sys, "class", "ptp")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("phc discover: %w", err)
	}
	owners := interfacesByPHC(p.Sys)
	var out []Info
	for _, e := range entries {
		idx, err := indexFromPath(e.Name())
		if err != nil {
			continue
		}
		base := filepath.Join(dir, e.Name())
		info := Info{Index: idx, Device: filepath.Join(p.Dev, e.Name()), Interfaces: owners[idx]}
		info.Name, err = readString(base, "clock_name")
		if err != nil {
			return out, err
		}
		for _, f := range []struct {
			name string
			dst  *int64
		}{{"max_adjustment", &info.MaxAdjPPB}} {
			if *f.dst, err = readInt(base, f.name); err != nil {
				return out, err
			}
		}
		for _, f := range []struct {
			name string
			dst  *int
		}{{"n_external_timestamps", &info.ExtTS}, {"n_periodic_outputs", &info.PerOut}, {"n_programmable_pins", &info.Pins}} {
			v, err := readInt(base, f.name)
			if err != nil {
				return out, err
			}
			*f.dst = int(v)
		}
		pps, err := readInt(base, "pps_available")
		if err != nil {
			return out, err
		}
		info.PPS = pps != 0
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out, nil
}

// phcLinks are the sysfs entries that name the PHC of interface iface ("*"
// for every interface): class/net/IF/device/ptp/ptpN under sys.
func phcLinks(sys, iface string) []string {
	matches, _ := filepath.Glob(filepath.Join(sys, "class", "net", iface, "device", "ptp", "ptp*"))
	return matches
}

// SysfsInterfacePHC is the index of iface's PHC as sysfs (under sys) shows
// it, without asking the kernel; false when sysfs names none.
func SysfsInterfacePHC(sys, iface string) (int, bool) {
	for _, m := range phcLinks(sys, iface) {
		if idx, err := indexFromPath(m); err == nil {
			return idx, true
		}
	}
	return -1, false
}

// interfacesByPHC maps PHC index -> interfaces via /sys/class/net/IF/device/ptp/ptpN.
func interfacesByPHC(sys string) map[int][]string {
	out := map[int][]string{}
	matches := phcLinks(sys, "*")
	for _, m := range matches {
		idx, err := indexFromPath(m)
		if err != nil {
			continue
		}
		iface := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(m))))
		out[idx] = append(out[idx], iface)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// indexFromPath parses N from "ptpN" or ".../ptpN".
func indexFromPath(path string) (int, error) {
	rest, ok := strings.CutPrefix(filepath.Base(path), "ptp")
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("phc %s: not a /dev/ptpN path", path)
	}
	return n, nil
}

func readString(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return "", fmt.Errorf("phc sysfs: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

func readInt(dir, name string) (int64, error) {
	s, err := readString(dir, name)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("phc sysfs %s: %q is not an integer", filepath.Join(dir, name), s)
	}
	return v, nil
}
