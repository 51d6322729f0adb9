package inventory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// Inventory is what monagent can measure on this machine. Whatever is missing is
// listed as absent, with the reason, rather than failing the probe. Every
// list is one in JSON too, [] when empty, never null.
type Inventory struct {
	Host       string          `json:"host"`
	GOOS       string          `json:"goos"`
	GOARCH     string          `json:"goarch"`
	Clocks     []ClockProbe    `json:"clocks"`
	Kernel     *KernelProbe    `json:"kernel_clock,omitempty"`
	KernelErr  string          `json:"kernel_clock_error,omitempty"`
	PHCs       []PHCProbe      `json:"phcs"`
	Interfaces []IfaceProbe    `json:"interfaces"`
	GPIOChips  []string        `json:"gpio_chips"`
	GPIO       []GPIOChipProbe `json:"gpio"`
	PPS        []PPSProbe      `json:"pps"`
	IIO        []DeviceProbe   `json:"iio"`
	Hwmon      []DeviceProbe   `json:"hwmon"`
	Thermal    []DeviceProbe   `json:"thermal_zones"`
	Daemons    []SocketProbe   `json:"daemons"`
	Influx     *InfluxProbe    `json:"influx,omitempty"`
	Absent     Absent          `json:"absent"` // why a list is empty
	Notes      []string        `json:"notes"`
}

// Absent says why a list of the inventory is empty, in the words of the text
// ("absent: no /dev/pps*"); a field is set when its list is empty. The keys
// are the lists'.
type Absent struct {
	PHCs      string `json:"phcs,omitempty"`
	GPIOChips string `json:"gpio_chips,omitempty"`
	PPS       string `json:"pps,omitempty"`
	IIO       string `json:"iio,omitempty"`
	Hwmon     string `json:"hwmon,omitempty"`
	Thermal   string `json:"thermal_zones,omitempty"`
}

// Paths are the roots the probe looks under: sysfs, /dev and /run (the
// agent's paths section), so that tests run on fixture trees.
type Paths struct {
	Sys, Dev, Run string
}

// Env is what the probe reads; tests substitute fixture trees and fakes.
type Env struct {
	Paths        Paths
	Timestamping func(iface string) (sockts.Timestamping, error) // what a NIC can timestamp
	ReadPHC      func(path string) PHCProbe                      // opens and measures one PHC
	GPIOChip     func(path string) GPIOChipProbe                 // opens a GPIO chip and lists its lines
	PPS          func(path string) PPSProbe                      // opens a PPS device and reads its caps
	Timex        func() (timebase.KernelState, error)
	Clocks       bool         // read the real system clocks
	ChronyUDP    string       // chronyd's command port, "" to skip
	Influx       *Influx      // nil: InfluxDB is not probed
	HTTP         *http.Client // for Influx; nil: a default client
}

// DefaultEnv probes the real machine under paths.
func DefaultEnv(p Paths) Env {
	return Env{Paths: p, Timestamping: sockts.InterfaceTimestamping, ReadPHC: readPHC, GPIOChip: readGPIOChip, PPS: readPPS, Timex: timebase.ReadKernelState, Clocks: true, ChronyUDP: "127.0.0.1:323"}
}

// Probe inventories the machine.
func Probe(ctx context.Context, env Env) Inventory {
	inv := Inventory{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, Clocks: []ClockProbe{}, Notes: []string{}}
	inv.Host, _ = os.Hostname()
	if env.Clocks {
		inv.Clocks = probeClocks()
	}
	if env.Timex != nil {
		inv.Kernel, inv.KernelErr = probeKernel(env.Timex)
	}
	p := env.Paths
	var note string
	if inv.PHCs, note = probePHCs(phc.Paths{Sys: p.Sys, Dev: p.Dev}, env.ReadPHC); note != "" {
		inv.Notes = append(inv.Notes, note)
	}
	inv.Interfaces = probeInterfaces(p.Sys, env.Timestamping)
	inv.GPIOChips, inv.GPIO = probeGPIO(p.Dev, env.GPIOChip)
	inv.PPS = probePPS(p, env.PPS)
	inv.IIO, inv.Hwmon, inv.Thermal = probeSensors(p.Sys)
	inv.Absent = Absent{
		PHCs: absent(inv.PHCs, absentPHCs), GPIOChips: absent(inv.GPIOChips, absentGPIO), PPS: absent(inv.PPS, absentPPS),
		IIO: absent(inv.IIO, absentIIO), Hwmon: absent(inv.Hwmon, absentHwmon), Thermal: absent(inv.Thermal, absentThermal),
	}
	inv.Daemons = probeDaemons(ctx, p.Run, env.ChronyUDP)
	if env.Influx != nil {
		client := env.HTTP
		if client == nil {
			client = &http.Client{}
		}
		ip := probeInflux(ctx, client, *env.Influx)
		inv.Influx = &ip
	}
	return inv
}

// WriteText prints the inventory for a person: offsets signed with a unit,
// absolute times as dates. --json keeps the raw int64 ns.
func (inv *Inventory) WriteText(w io.Writer) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pf("monagent probe on %s (%s/%s)\n\n", inv.Host, inv.GOOS, inv.GOARCH)
	inv.writeClocks(pf)
	inv.writePHCs(pf)
	inv.writeInterfaces(pf)
	inv.writeGPIO(pf)
	inv.writePPS(pf)
	inv.writeSensors(pf)
	inv.writeDaemons(pf)
	inv.writeInflux(pf)
	for _, n := range inv.Notes {
		pf("\nnote: %s\n", n)
	}
}

// glob lists the matches sorted; none is an empty list.
func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return list(m)
}

// list is s, or an empty list for nil: JSON's [] rather than null.
func list[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// absent is why when s is empty.
func absent[T any](s []T, why string) string {
	if len(s) > 0 {
		return ""
	}
	return why
}

func readTrim(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// errText drops the path from a path error: the probe prints the path already.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
