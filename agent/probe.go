package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// Inventory is what monagent can measure on this machine. Whatever is missing is
// listed as absent, with the reason, rather than failing the probe.
type Inventory struct {
	Host       string        `json:"host"`
	GOOS       string        `json:"goos"`
	GOARCH     string        `json:"goarch"`
	Clocks     []ClockProbe  `json:"clocks"`
	Kernel     *KernelProbe  `json:"kernel_clock,omitempty"`
	KernelErr  string        `json:"kernel_clock_error,omitempty"`
	PHCs       []PHCProbe    `json:"phcs"`
	Interfaces []IfaceProbe  `json:"interfaces"`
	GPIOChips  []string      `json:"gpio_chips"`
	PPS        []DeviceProbe `json:"pps"`
	IIO        []DeviceProbe `json:"iio"`
	Hwmon      []DeviceProbe `json:"hwmon"`
	Thermal    []DeviceProbe `json:"thermal_zones"`
	Daemons    []SocketProbe `json:"daemons"`
	Notes      []string      `json:"notes,omitempty"`
}

// ClockProbe describes one system clock.
type ClockProbe struct {
	Name         string `json:"name"`
	ResolutionNS int64  `json:"resolution_ns"`
	NowNS        int64  `json:"now_ns"`
	OffsetNS     int64  `json:"offset_from_monotonic_raw_ns"`
	Error        string `json:"error,omitempty"`
}

// KernelProbe is the adjtimex state.
type KernelProbe struct {
	State      string `json:"state"`
	Status     string `json:"status"`
	Synced     bool   `json:"synced"`
	OffsetNS   int64  `json:"offset_ns"`
	FreqPPB    int64  `json:"freq_ppb"`
	MaxErrorNS int64  `json:"maxerror_ns"`
	EstErrorNS int64  `json:"esterror_ns"`
	TAIOffsetS int64  `json:"tai_offset_s"`
}

// PHCProbe is a PHC with its capabilities and a trial reading.
type PHCProbe struct {
	phc.Info
	Caps        *phc.Caps `json:"caps,omitempty"`
	PinFuncs    []phc.Pin `json:"pins,omitempty"`
	Method      string    `json:"method,omitempty"`
	OffsetNS    int64     `json:"offset_from_realtime_ns,omitempty"`
	DelayNS     int64     `json:"read_delay_ns,omitempty"`
	Refusals    []string  `json:"method_refusals,omitempty"`
	Error       string    `json:"error,omitempty"`
	ClockGetRes int64     `json:"resolution_ns,omitempty"`
}

// IfaceProbe is a network interface's timestamping support.
type IfaceProbe struct {
	Name         string   `json:"name"`
	PHCIndex     int      `json:"phc_index"`
	Capabilities []string `json:"timestamping"`
	Error        string   `json:"error,omitempty"`
}

// DeviceProbe is a device node or sysfs device with its name.
type DeviceProbe struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"`
}

// SocketProbe says whether a daemon's control socket is there and answers.
type SocketProbe struct {
	Daemon    string `json:"daemon"`
	Address   string `json:"address"`
	Present   bool   `json:"present"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail,omitempty"`
}

// ProbeEnv is what the probe reads; tests substitute fixture trees and fakes.
type ProbeEnv struct {
	Paths        PathsConfig
	Timestamping func(iface string) (phc.Timestamping, error)
	ReadPHC      func(path string) PHCProbe // opens and measures one PHC
	Timex        func() (timebase.KernelState, error)
	Clocks       bool   // read the real system clocks
	ChronyUDP    string // chronyd's command port, "" to skip
}

// DefaultProbeEnv probes the real machine under paths.
func DefaultProbeEnv(p PathsConfig) ProbeEnv {
	return ProbeEnv{Paths: p, Timestamping: phc.InterfaceTimestamping, ReadPHC: readPHC, Timex: timebase.ReadKernelState, Clocks: true, ChronyUDP: "127.0.0.1:323"}
}

// Probe inventories the machine.
func Probe(ctx context.Context, env ProbeEnv) Inventory {
	inv := Inventory{GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	inv.Host, _ = os.Hostname()
	if env.Clocks {
		inv.Clocks = probeClocks()
	}
	if env.Timex != nil {
		if k, err := env.Timex(); err != nil {
			inv.KernelErr = err.Error()
		} else {
			inv.Kernel = &KernelProbe{State: k.StateString(), Status: k.StatusString(), Synced: k.Synced(), OffsetNS: k.OffsetNS,
				FreqPPB: k.FreqPPB, MaxErrorNS: k.MaxErrorNS, EstErrorNS: k.EstErrorNS, TAIOffsetS: k.TAIOffsetS}
		}
	}
	p := env.Paths
	infos, err := phc.Discover(phc.Paths{Sys: p.Sys, Dev: p.Dev})
	if err != nil {
		inv.Notes = append(inv.Notes, "phc discovery: "+err.Error())
	}
	for _, info := range infos {
		pp := PHCProbe{Info: info}
		if env.ReadPHC != nil {
			r := env.ReadPHC(info.Device)
			r.Info = info
			pp = r
		}
		inv.PHCs = append(inv.PHCs, pp)
	}
	inv.Interfaces = probeInterfaces(p.Sys, env.Timestamping)
	inv.GPIOChips = glob(filepath.Join(p.Dev, "gpiochip*"))
	for _, d := range glob(filepath.Join(p.Dev, "pps*")) {
		inv.PPS = append(inv.PPS, DeviceProbe{Path: d, Name: readTrim(filepath.Join(p.Sys, "class", "pps", filepath.Base(d), "name"))})
	}
	for _, d := range glob(filepath.Join(p.Sys, "bus", "iio", "devices", "iio:device*")) {
		inv.IIO = append(inv.IIO, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "name"))})
	}
	for _, d := range glob(filepath.Join(p.Sys, "class", "hwmon", "hwmon*")) {
		inv.Hwmon = append(inv.Hwmon, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "name"))})
	}
	for _, d := range glob(filepath.Join(p.Sys, "class", "thermal", "thermal_zone*")) {
		inv.Thermal = append(inv.Thermal, DeviceProbe{Path: d, Name: readTrim(filepath.Join(d, "type"))})
	}
	inv.Daemons = []SocketProbe{probeUnixgram(ctx, "chronyd", filepath.Join(p.Run, "chrony", "chronyd.sock"))}
	if env.ChronyUDP != "" {
		inv.Daemons = append(inv.Daemons, probeUDP(ctx, "chronyd", env.ChronyUDP))
	}
	inv.Daemons = append(inv.Daemons, probeUnixgram(ctx, "ptp4l", filepath.Join(p.Run, "ptp4l")))
	return inv
}

func probeClocks() []ClockProbe {
	var out []ClockProbe
	for _, c := range timebase.SystemClocks() {
		cp := ClockProbe{Name: c.Domain().String()}
		res, err := c.Resolution()
		if err == nil {
			var a, b, now int64
			a, err = timebase.MonotonicRaw.Now()
			if err == nil {
				now, err = c.Now()
			}
			if err == nil {
				b, err = timebase.MonotonicRaw.Now()
			}
			cp.ResolutionNS, cp.NowNS, cp.OffsetNS = res, now, now-(a+(b-a)/2)
		}
		if err != nil {
			cp.Error = err.Error()
		}
		out = append(out, cp)
	}
	return out
}

func probeInterfaces(sys string, ts func(string) (phc.Timestamping, error)) []IfaceProbe {
	var out []IfaceProbe
	for _, d := range glob(filepath.Join(sys, "class", "net", "*")) {
		ip := IfaceProbe{Name: filepath.Base(d), PHCIndex: -1}
		if ts != nil {
			t, err := ts(ip.Name)
			ip.PHCIndex, ip.Capabilities = t.PHCIndex, t.Capabilities()
			if err != nil {
				ip.Error = err.Error()
			}
		}
		out = append(out, ip)
	}
	return out
}

func probeUnixgram(ctx context.Context, daemon, path string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: path}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		sp.Detail = "absent: " + errText(err)
		return sp
	case fi.Mode()&fs.ModeSocket == 0:
		sp.Detail = "exists but is not a socket"
		return sp
	}
	sp.Present = true
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unixgram", path)
	if err != nil {
		sp.Detail = "does not answer: " + errText(err)
		return sp
	}
	c.Close()
	sp.Reachable = true
	return sp
}

// probeUDP checks a loopback UDP port by sending nothing and asking the kernel
// whether anything listens (a connected UDP socket reports ECONNREFUSED on read
// after an ICMP port unreachable).
func probeUDP(ctx context.Context, daemon, addr string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: "udp://" + addr}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		sp.Detail = "absent: " + errText(err)
		return sp
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	c.Write([]byte{0}) // a one-byte datagram: chronyd drops it as malformed
	_, err = c.Read(make([]byte, 1))
	if err != nil && strings.Contains(err.Error(), "refused") {
		sp.Detail = "absent: nothing listens"
		return sp
	}
	sp.Present, sp.Reachable = true, true
	return sp
}

func glob(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	sort.Strings(m)
	return m
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

// WriteText prints the inventory for a person.
func (inv *Inventory) WriteText(w io.Writer) {
	pf := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	pf("monagent probe on %s (%s/%s)\n\n", inv.Host, inv.GOOS, inv.GOARCH)
	pf("System clocks (offset from monotonic_raw):\n")
	for _, c := range inv.Clocks {
		if c.Error != "" {
			pf("  %-14s error: %s\n", c.Name, c.Error)
			continue
		}
		pf("  %-14s resolution %d ns, offset %d ns\n", c.Name, c.ResolutionNS, c.OffsetNS)
	}
	pf("\nKernel clock discipline (adjtimex):\n")
	if k := inv.Kernel; k != nil {
		pf("  state %s, status %s, synced %v\n  offset %d ns, frequency %d ppb, maxerror %d ns, esterror %d ns, TAI-UTC %d s\n",
			k.State, orNone(k.Status), k.Synced, k.OffsetNS, k.FreqPPB, k.MaxErrorNS, k.EstErrorNS, k.TAIOffsetS)
	} else {
		pf("  unavailable: %s\n", inv.KernelErr)
	}
	pf("\nPTP hardware clocks:\n")
	if len(inv.PHCs) == 0 {
		pf("  absent: no /sys/class/ptp entries (no PHC driver loaded)\n")
	}
	for _, p := range inv.PHCs {
		pf("  %s  %q  interfaces %s  max adj %d ppb, extts %d, perout %d, pins %d, pps %v\n",
			p.Device, p.Name, orNone(strings.Join(p.Interfaces, ",")), p.MaxAdjPPB, p.ExtTS, p.PerOut, p.Pins, p.PPS)
		if p.Caps != nil {
			pf("    cross-timestamping %v, adjust phase %v\n", p.Caps.CrossTimestamping, p.Caps.AdjustPhase)
		}
		for _, pin := range p.PinFuncs {
			pf("    pin %d %q: %s channel %d\n", pin.Index, pin.Name, pin.Func, pin.Channel)
		}
		if p.Error != "" {
			pf("    error: %s\n", p.Error)
		} else if p.Method != "" {
			pf("    offset from realtime %d ns, read delay %d ns (%s)\n", p.OffsetNS, p.DelayNS, p.Method)
		}
		for _, r := range p.Refusals {
			pf("    refused: %s\n", r)
		}
	}
	pf("\nNetwork interfaces (timestamping):\n")
	for _, i := range inv.Interfaces {
		phcText := "no PHC"
		if i.PHCIndex >= 0 {
			phcText = fmt.Sprintf("PHC /dev/ptp%d", i.PHCIndex)
		}
		pf("  %-10s %s, %s", i.Name, phcText, orNone(strings.Join(i.Capabilities, " ")))
		if i.Error != "" {
			pf(" (%s)", i.Error)
		}
		pf("\n")
	}
	list := func(title, absent string, ds []DeviceProbe) {
		pf("\n%s:\n", title)
		if len(ds) == 0 {
			pf("  absent: %s\n", absent)
		}
		for _, d := range ds {
			pf("  %s %s\n", d.Path, d.Name)
		}
	}
	pf("\nGPIO chips:\n")
	if len(inv.GPIOChips) == 0 {
		pf("  absent: no /dev/gpiochip*\n")
	}
	for _, g := range inv.GPIOChips {
		pf("  %s\n", g)
	}
	list("PPS sources", "no /dev/pps*", inv.PPS)
	list("IIO devices", "no /sys/bus/iio/devices/iio:device*", inv.IIO)
	list("hwmon chips", "no /sys/class/hwmon/hwmon*", inv.Hwmon)
	list("Thermal zones", "no /sys/class/thermal/thermal_zone*", inv.Thermal)
	pf("\nTime daemons:\n")
	for _, d := range inv.Daemons {
		state := "reachable"
		if !d.Reachable {
			state = "not reachable"
		}
		pf("  %-8s %-32s %s", d.Daemon, d.Address, state)
		if d.Detail != "" {
			pf(" (%s)", d.Detail)
		}
		pf("\n")
	}
	for _, n := range inv.Notes {
		pf("\nnote: %s\n", n)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
