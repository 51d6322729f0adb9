// Command monagent measures clock synchronisation, timestamps events and ships
// the results to InfluxDB. See the README for a quick start.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/monagent/monagent/agent"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// Exit codes: 1 for runtime failures, 2 for bad usage or configuration;
// status adds 3 (no monagent answered: the state is unknown).
const (
	exitFail   = 1
	exitConfig = 2
)

// subcommand is one monagent command; flags is nil when the command parses its own
// arguments (args then documents them).
type subcommand struct {
	name, args, about string
	flags             func() *flag.FlagSet
	run               func([]string) error
}

func commands() []subcommand {
	return []subcommand{
		{"run", "--config FILE [flags]", "measure and write records until stopped", func() *flag.FlagSet { fs, _ := runFlags(); return fs }, runCmd},
		{"probe", "[flags]", "inventory clocks, PHCs, NICs, GPIO, sensors, daemons, InfluxDB; exit 1 when the configured InfluxDB cannot take writes", func() *flag.FlagSet { fs, _ := probeFlags(); return fs }, probeCmd},
		{"config", "check FILE...", "validate configuration files (a shell glob works)", nil, configCmd},
		{"spool", "replay-deadletter|stats|export --config FILE [flags]", "ship dead-lettered lines again once their cause is fixed (stop the agent first); or show what the spool holds (stats), or write its records as line protocol (export); stats and export run beside the agent and change nothing", func() *flag.FlagSet { fs, _, _, _ := spoolFlags(); return fs }, spoolCmd},
		{"report", "--measurement M --field F [flags]", "statistics of an offset series (mean, σ, percentiles, drift, ADEV/MDEV/TDEV/MTIE) from the spool, a line-protocol file or InfluxDB; tables and plots", func() *flag.FlagSet { fs, _ := reportFlags(); return fs }, reportCmd},
		{"hca", "sim [flags]", "simulate or run (--transport udp) the HCA clock synchronisation between N agents and report each model's true error", func() *flag.FlagSet { fs, _ := hcaFlags(); return fs }, hcaCmd},
		{"status", "[--config FILE | --url URL] [--json] [--watch D]", "the running agent's judged clocks: state, since when, offset, error bound, last sample; exit 0 all LOCKED, 1 some not LOCKED (a clock disputed, a falseticker named), 3 no monagent answered, 2 usage", func() *flag.FlagSet { fs, _ := statusFlags(); return fs }, statusCmd},
		{"time", "[--config FILE | --path P] [--clock NAME] [--json] [--watch D]", "the true time from the agent's time API: the interval, its width and state; exit 0 LOCKED or HOLDOVER, 1 FREERUN or UNKNOWN, 3 void, 4 no segment or clock, 5 malformed, 2 usage", func() *flag.FlagSet { fs, _ := timeFlags(); return fs }, timeCmd},
		{"version", "", "print the version", func() *flag.FlagSet { return flag.NewFlagSet("version", flag.ContinueOnError) }, versionCmd},
	}
}

func main() {
	err := dispatch(os.Args[1:])
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	// Every line of a multi-line error (a configuration's problems) says
	// whose it is, as the first does.
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintln(os.Stderr, "monagent:", line)
	}
	var ke *agent.KeyError
	var ue usageError
	if errors.As(err, &ke) || errors.As(err, &ue) {
		os.Exit(exitConfig)
	}
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		os.Exit(ec.ExitCode()) // a command's own codes (status: 3, unknown)
	}
	os.Exit(exitFail)
}

func dispatch(args []string) error {
	if len(args) == 0 {
		writeUsage(os.Stderr)
		return usageError("no command given")
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			writeUsage(os.Stdout)
			return nil
		}
		if len(rest) > 1 {
			return usageError(fmt.Sprintf("help: unexpected arguments %q", rest[1:]))
		}
		name, rest = rest[0], []string{"--help"}
	case "--version", "-version":
		name = "version"
	}
	i := slices.IndexFunc(commands(), func(c subcommand) bool { return c.name == name })
	if i < 0 {
		return usageError(fmt.Sprintf("unknown command %q (see 'monagent --help')", name))
	}
	c := commands()[i]
	if c.flags == nil && len(rest) == 1 && slices.Contains([]string{"-h", "-help", "--help"}, rest[0]) {
		writeCommand(os.Stdout, c)
		return flag.ErrHelp
	}
	return c.run(rest)
}

func (e usageError) Error() string { return string(e) }

func versionCmd(args []string) error {
	if err := parseFlags(flag.NewFlagSet("version", flag.ContinueOnError), args); err != nil {
		return err
	}
	fmt.Println("monagent", versionString(), buildString())
	return nil
}

// buildString is what the binary was built from and with: the commit (and
// whether the tree had changes), the Go version and the target, from the
// build info.
func buildString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	}
	var rev, modified, target string
	goarm := ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		case "GOARM":
			goarm = "v" + s.Value
		}
	}
	target = runtime.GOOS + "/" + runtime.GOARCH + goarm
	commit := "no commit recorded"
	if rev != "" {
		commit = "commit " + rev + modified
	}
	return fmt.Sprintf("(%s, %s, %s)", commit, bi.GoVersion, target)
}

func versionString() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return "dev-" + s.Value[:min(12, len(s.Value))]
			}
		}
	}
	return "dev"
}
