package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// PHCConfig is the PTP hardware clock source (source_phc_linux.go).
type PHCConfig struct {
	Enabled bool `yaml:"enabled"`
	// Devices (/dev/ptpN) and Interfaces (whose PHC is used) to measure; both
	// empty means every PHC found.
	Devices    []string      `yaml:"devices"`
	Interfaces []string      `yaml:"interfaces"`
	Interval   time.Duration `yaml:"interval"`
	Samples    int           `yaml:"samples"` // best of N reads per sample
	Method     string        `yaml:"method"`  // auto, precise, extended, basic
	Against    []string      `yaml:"against"` // system clocks: realtime, monotonic_raw, monotonic
	Window     int           `yaml:"window"`  // samples in the translation model
	// A reading is a step of the PHC (phc_step) when it lies further from
	// what the PHC's rate over the previous interval predicts than
	// StepThreshold, MaxSlewPPM times the interval (how far a servo may move
	// the PHC's rate from one reading to the next) and the read windows
	// allow (phc.StepDetector).
	StepThreshold time.Duration `yaml:"step_threshold"`
	MaxSlewPPM    float64       `yaml:"max_slew_ppm"`
	// Judge judges the system clock against each PHC (phc2sys's work): off
	// by default, as a PHC no servo ties to the system clock is no reference.
	Judge JudgeConfig `yaml:"judge"`
	// Timescale is what the PHCs keep: tai (PTP's timescale, ptp4l's
	// default) or utc. TAIUTC is TAI−UTC in seconds (0: the kernel's, which
	// chronyd with leapsectz sets).
	Timescale string `yaml:"timescale"`
	TAIUTC    int    `yaml:"tai_utc"`
	// Through names the judged clock the PHC follows (ptp4l: the ptp.ptp4l
	// monitor's): the system clock is then judged against that clock's
	// reference, its bound added (system ← PHC ← grandmaster).
	Through string `yaml:"through"`
}

func (p *PHCConfig) defaults() {
	*p = PHCConfig{
		Enabled: true, Interval: time.Second, Samples: 9, Method: "auto",
		Against: []string{"realtime", "monotonic_raw"}, Window: 32,
		StepThreshold: time.Millisecond, MaxSlewPPM: 500, Timescale: "tai",
		Judge: JudgeConfig{Threshold: 100 * time.Microsecond, Holdover: 5 * time.Second, MinSamples: 2},
	}
}

func (p *PHCConfig) check(ps *problems) {
	ps.Interval("phc.interval", p.Interval)
	conf.Within(ps, "phc.samples", p.Samples, 1, phc.MaxSamples, " (PTP_MAX_SAMPLES)")
	if _, err := phc.ParseMethod(p.Method); err != nil {
		ps.Add("phc.method", "%v", err)
	}
	if len(p.Against) == 0 {
		ps.Add("phc.against", "needs at least one system clock")
	}
	against := conf.Seen[timebase.Domain]{}
	for i, name := range p.Against {
		key := fmt.Sprintf("phc.against[%d]", i)
		d, err := timebase.ParseDomain(name)
		if err != nil || !phc.ReadsAgainst(d) {
			ps.Add(key, "%q: a PHC is read against realtime, monotonic or monotonic_raw", name)
		} else if j, dup := against.Again(d, i); dup {
			ps.Dup(key, fmt.Sprintf("phc.against[%d]", j), "%q is listed twice: two identical phc_offset points each collection", name)
		}
	}
	conf.AtLeast(ps, "phc.window", p.Window, 2, " samples")
	devices := conf.Seen[string]{}
	for i, d := range p.Devices {
		key := fmt.Sprintf("phc.devices[%d]", i)
		if d == "" {
			ps.Add(key, "must not be empty")
		} else if j, dup := devices.Again(filepath.Clean(d), i); dup {
			ps.Dup(key, fmt.Sprintf("phc.devices[%d]", j), "%s is listed twice: list each PHC once", d)
		}
	}
	ifaces := conf.Seen[string]{}
	for i, name := range p.Interfaces {
		if j, dup := ifaces.Again(name, i); dup {
			ps.Dup(fmt.Sprintf("phc.interfaces[%d]", i), fmt.Sprintf("phc.interfaces[%d]", j), "%s is listed twice: list each PHC once", name)
		}
	}
	ps.Positive("phc.step_threshold", p.StepThreshold)
	conf.Within(ps, "phc.max_slew_ppm", p.MaxSlewPPM, 0, 1e6, "")
	p.Judge.Check("phc.judge", ps)
	if p.Timescale != "tai" && p.Timescale != "utc" {
		ps.Add("phc.timescale", "%q: want tai or utc", p.Timescale)
	}
	conf.NotNegative(ps, "phc.tai_utc", p.TAIUTC)
	if p.Through != "" && p.Through != "ptp4l" {
		ps.Add("phc.through", "%q: want ptp4l, or nothing", p.Through)
	}
	if p.Judge.Enabled && !slices.Contains(p.Against, "realtime") {
		ps.Add("phc.judge", "judges the system clock from the readings against realtime: list realtime in phc.against")
	}
}

// advise says when a PHC on TAI cannot be judged here: this machine's
// kernel has no TAI−UTC and phc.tai_utc does not give it.
func (p *PHCConfig) advise(ps *problems) {
	if !p.Enabled || !p.Judge.Enabled || p.Timescale != "tai" || p.TAIUTC > 0 {
		return
	}
	if k, err := timebase.ReadKernelState(); err == nil && k.TAIOffsetS == 0 {
		ps.Add("phc.tai_utc", "needs the board: this kernel's TAI-UTC is not set, so the PHCs on TAI cannot be judged (FREERUN) until chronyd (leapsectz right/UTC) sets it: or set tai_utc: 37")
	}
}

// board checks that the PHC devices and interfaces named exist.
func (p *PHCConfig) board(paths PathsConfig, ps *problems) {
	if !p.Enabled {
		return
	}
	for i, d := range p.Devices {
		if d == "" {
			continue
		}
		if _, err := os.Stat(d); err != nil {
			ps.Put(&KeyError{Key: fmt.Sprintf("phc.devices[%d]", i), Reason: fmt.Sprintf("%s: %v", d, errors.Unwrap(err)), Err: err})
		}
	}
	for i, name := range p.Interfaces {
		ifaceExists(paths, fmt.Sprintf("phc.interfaces[%d]", i), name, ps)
	}
	p.boardDuplicates(paths, ps)
}

// boardDuplicates records each interface whose PHC (as sysfs shows it) a
// device or an earlier interface of the section names already
// (phc.SharedPHCs): it is measured once.
func (p *PHCConfig) boardDuplicates(paths PathsConfig, ps *problems) {
	if len(p.Interfaces) == 0 {
		return
	}
	infos, err := phc.Discover(phc.Paths{Sys: paths.Sys, Dev: paths.Dev})
	if err != nil {
		return
	}
	for _, sh := range phc.SharedPHCs(infos, p.Devices, p.Interfaces) {
		also := fmt.Sprintf("phc.interfaces[%d]", sh.By)
		if sh.ByDevice {
			also = fmt.Sprintf("phc.devices[%d]", sh.By)
		}
		ps.Put(&KeyError{Key: fmt.Sprintf("phc.interfaces[%d]", sh.Interface), Reason: fmt.Sprintf("%s's PHC is %s, named already: list each PHC once", p.Interfaces[sh.Interface], sh.Device), Also: also})
	}
}

// notMeasured says why the phc section keeps no model of the PHC dev, which
// another source (extts, gpio.phc) needs to move its stamps: the selection
// cannot include it (phc.MaySelect). "" when it is measured, or may be.
func (p *PHCConfig) notMeasured(dev string) string {
	if !p.Enabled || phc.MaySelect(p.Devices, p.Interfaces, dev) {
		return ""
	}
	return fmt.Sprintf("%s is not among phc.devices %v: the phc source keeps no model of it, so no stamp could be moved to REALTIME (add it there, or leave phc.devices empty to measure every PHC)", dev, p.Devices)
}
