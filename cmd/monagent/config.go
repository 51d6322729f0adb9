package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/monagent/monagent/agent"
)

func configCmd(args []string) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError("config: want 'config check FILE...' (see 'monagent config --help')")
	}
	files := args[1:]
	if i := slices.Index(files, "--"); i >= 0 {
		files = slices.Delete(files, i, i+1)
	} else {
		for _, f := range files {
			if f == "-h" || f == "-help" || f == "--help" {
				return helpFor("config")
			}
			if strings.HasPrefix(f, "-") && f != "-" {
				return usageError(fmt.Sprintf("config check: unknown flag %s (see 'monagent config --help')", f))
			}
		}
	}
	if len(files) == 0 {
		return usageError("config check: want at least one FILE (see 'monagent config --help')")
	}
	return checkFiles(os.Stdout, files)
}

// checkFiles prints, for each file, every problem on its own line
// (FILE:LINE: key: reason, warnings as FILE:LINE: key: warning: reason) and
// FILE: ok when it has no problem but warnings, followed by FILE: memory:
// what the configuration needs in memory. It returns a one-line usage
// error naming the files that failed.
func checkFiles(w io.Writer, files []string) error {
	var failed []string
	for _, f := range files {
		ps, err := agent.Check(f)
		if err != nil {
			fmt.Fprintln(w, err)
			failed = append(failed, f+": unreadable")
			continue
		}
		for _, p := range ps {
			fmt.Fprintln(w, p)
		}
		if n := len(ps.Errors()); n > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d %s", f, n, plural(n, "problem", "problems")))
			continue
		}
		fmt.Fprintf(w, "%s: ok\n", f)
		if cfg, err := agent.Load(f); err == nil {
			fmt.Fprintf(w, "%s: memory: %s; memory.limit %.0f MiB\n", f, cfg.MemoryNeed(), float64(cfg.Memory.Limit)/(1<<20))
		}
	}
	if len(failed) > 0 {
		return usageError(fmt.Sprintf("config check: %d of %d %s failed: %s", len(failed), len(files), plural(len(files), "file", "files"), strings.Join(failed, ", ")))
	}
	return nil
}

// helpFor prints a command's help to standard output and returns
// flag.ErrHelp (exit 0).
func helpFor(name string) error {
	for _, c := range commands() {
		if c.name == name {
			writeCommand(os.Stdout, c)
		}
	}
	return flag.ErrHelp
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fileErr names the file on a preflight *KeyError that lacks it (Preflight
// of a parsed configuration already names it).
func fileErr(path string, err error) error {
	var ke *agent.KeyError
	if errors.As(err, &ke) && ke.File == "" {
		ke.File = path
	}
	return err
}
