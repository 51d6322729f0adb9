// Command monagent measures clock synchronisation, timestamps events and ships
// the results to InfluxDB. See the README for a quick start.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"

	"github.com/monagent/monagent/agent"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

const usage = `usage: monagent <command> [flags]

commands:
  run --config FILE [--duration D]   measure and write records until stopped
  probe [--json]                     inventory clocks, PHCs, NICs, GPIO, sensors, daemons
  config check FILE                  validate a configuration file
  version                            print the version
`

// Exit codes: 1 for runtime failures, 2 for bad usage or configuration.
const (
	exitFail   = 1
	exitConfig = 2
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(exitConfig)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "run":
		err = runCmd(args)
	case "probe":
		err = probeCmd(args)
	case "config":
		err = configCmd(args)
	case "version", "--version", "-version":
		fmt.Println("monagent", versionString())
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		err = usageError(fmt.Sprintf("unknown command %q", cmd))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "monagent:", err)
		var ke *agent.KeyError
		var ue usageError
		if errors.As(err, &ke) || errors.As(err, &ue) {
			os.Exit(exitConfig)
		}
		os.Exit(exitFail)
	}
}

type usageError string

func (e usageError) Error() string { return string(e) + "\n" + usage }

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
