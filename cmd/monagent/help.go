package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// parseFlags parses one command's flags. -h/--help prints the command's help
// to standard output and returns flag.ErrHelp (exit 0); a bad flag or any
// positional argument is a one-line usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		for _, c := range commands() {
			if c.name == fs.Name() {
				writeCommand(os.Stdout, c)
			}
		}
		return flag.ErrHelp
	case err != nil:
		return usageError(fmt.Sprintf("%s: %v (see 'monagent %s --help')", fs.Name(), err, fs.Name()))
	case fs.NArg() > 0:
		return usageError(fmt.Sprintf("%s: unexpected arguments %q (see 'monagent %s --help')", fs.Name(), fs.Args(), fs.Name()))
	}
	return nil
}

func writeUsage(w io.Writer) {
	fmt.Fprint(w, "usage: monagent <command> [flags]\n\ncommands:\n")
	for _, c := range commands() {
		writeCommand(w, c)
	}
	fmt.Fprint(w, "\n'monagent <command> --help' shows one command.\nexit codes: 0 ok, 1 runtime failure, 2 bad usage or configuration\n")
}

// writeCommand prints a command's synopsis and every flag with its default.
func writeCommand(w io.Writer, c subcommand) {
	fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace("monagent "+c.name+" "+c.args), c.about)
	if c.flags == nil {
		return
	}
	c.flags().VisitAll(func(f *flag.Flag) {
		arg, usage := flag.UnquoteUsage(f)
		def := f.DefValue
		if def == "" {
			def = `""`
		}
		fmt.Fprintf(w, "      --%-18s %s (default %s)\n", f.Name+" "+arg, usage, def)
	})
}

type usageError string
