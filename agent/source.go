package agent

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// This file is the kit: what a source (source_<x>*.go) may use besides its
// own files and the core (Config, the table, judging, instances, key
// errors). A source never names another source's identifiers
// (TestSourcesUseOnlyTheKit); what two sources share lives here. The kit
// also holds: checkRing and the memory uses (config_memory.go), buildInstances
// and daemon (daemon.go), the global timeline (global.go) and keyErr
// (config.go). The judges are package judging: a source's judge:
// subsection is a JudgeConfig, its judged clock a *judgement (nil: not
// judged), added with env.judges.Add and told each sample with Observe
// (Missed when one due did not come), into an adder.

// The judges' types, as the sources name them.
type (
	JudgeConfig = judging.Config
	judgement   = judging.Judgement
	adder       = judging.Adder
)

// Env is what a source gets when it is built.
type Env struct {
	Config      *Config
	Log         *slog.Logger
	Translators *timebase.Translators
	// Global places event times on the cluster's HCA timeline; nil when the
	// hca section is off.
	Global *hca.Global
	judges *judging.Judges // where a source's judged clocks are registered
}

// translators are the clock models, new ones for an Env a test made bare.
func (e *Env) translators() *timebase.Translators {
	if e.Translators == nil {
		e.Translators = timebase.NewTranslators()
	}
	return e.Translators
}

// buildEach builds the sources of a section's list (key: "pps.devices"),
// each entry's in turn. When an entry fails, every source built so far (its
// own before the failure too) is closed and the error names the entry.
func buildEach[T any](key string, list []T, build func(x T) ([]collect.Source, error)) ([]collect.Source, error) {
	var out []collect.Source
	for i, x := range list {
		ss, err := build(x)
		out = append(out, ss...)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, keyErr(fmt.Sprintf("%s[%d]", key, i), "%v", err)
		}
	}
	return out, nil
}

// one is an entry's one source for buildEach, none when it failed.
func one[S collect.Source](s S, err error) ([]collect.Source, error) {
	if err != nil {
		return nil, err
	}
	return []collect.Source{s}, nil
}

// slabRecords is the records whose fields one allocation of a source's slab
// holds (collect.NewSlab).
const slabRecords = 512

// hardwarePHC is the clock domain of the PTP hardware clock of iface, the
// interface at key whose hardware timestamps a source uses.
func hardwarePHC(key, iface string) (timebase.Domain, error) {
	idx, err := phc.InterfacePHC(iface)
	if err != nil {
		return 0, keyErr(key, "%s: %v", iface, err)
	}
	if idx < 0 {
		return 0, keyErr(key, "%s has no PTP hardware clock for hardware timestamps", iface)
	}
	return timebase.PHC(idx), nil
}

// ifaceHasPHC records a problem when the network interface name is absent or
// has no PTP hardware clock (sysfs's class/net/NAME/device/ptp/ptpN), which
// hardware timestamps need.
func ifaceHasPHC(paths PathsConfig, key, name string, p *problems) {
	n := len(p.Problems)
	if ifaceExists(paths, key, name, p); len(p.Problems) > n {
		return
	}
	if _, ok := phc.SysfsInterfacePHC(paths.Sys, name); !ok {
		p.Add(key, "%s has no PTP hardware clock for hardware timestamps (nothing in %s)", name, filepath.Join(paths.Sys, "class/net", name, "device/ptp"))
	}
}

// ifaceExists records a problem when the network interface name is absent.
func ifaceExists(paths PathsConfig, key, name string, ps *problems) {
	if _, err := os.Stat(filepath.Join(paths.Sys, "class/net", name)); err != nil {
		ps.Put(&KeyError{Key: key, Reason: fmt.Sprintf("no network interface %q", name), Err: err})
	}
}

// phcOf is the domain of the PHC dev that a source's setting at key reads
// against: a /dev/ptpN the phc section measures (its models move the stamps;
// without the phc source, what it says of the stamps is logged).
func phcOf(env *Env, key, dev, who, without string) (timebase.Domain, error) {
	dom, err := phc.DeviceDomain(dev)
	if err != nil {
		return timebase.DomainUnknown, keyErr(key, "%q is not a PHC device (/dev/ptpN)", dev)
	}
	if !env.Config.PHC.Enabled && env.Log != nil {
		env.Log.Warn(who+" needs the phc source's model of the PHC: "+without, "phc", dev)
	}
	if why := env.Config.PHC.notMeasured(dev); why != "" {
		return timebase.DomainUnknown, keyErr(key, "%s", why)
	}
	return dom, nil
}

// ptp4lJudged is the judged clock of the first ptp.ptp4l instance, which
// phc.through: ptp4l follows: the one rule that spans two sections (phc
// judges the system clock through the clock ptp4l disciplines). It lives in
// the kit, reading only Config, so that the phc source names nothing of the
// ptp source; the error is at phc.through when that clock is not judged.
func ptp4lJudged(c *Config) (string, error) {
	p := c.PTP.Ptp4l.First()
	if !c.PTP.Enabled || !p.Enabled || !p.Judge.Enabled {
		return "", keyErr("phc.through", "ptp4l: the ptp.ptp4l monitor and its judge must be on")
	}
	return "ptp4l:" + p.Socket, nil
}
