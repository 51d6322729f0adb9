package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/sink"
)

func runCmd(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	path := fs.String("config", "", "configuration file (YAML)")
	duration := fs.Duration("duration", 0, "stop after this long (0: run until SIGINT/SIGTERM)")
	stdout := fs.Bool("stdout", false, "also write records to standard output")
	logLevel := fs.String("log-level", "", "override log.level")
	if err := fs.Parse(args); err != nil {
		return usageError(err.Error())
	}
	if *path == "" {
		return usageError("run: --config FILE is required")
	}
	cfg, err := agent.Load(*path)
	if err != nil {
		return err
	}
	if *stdout {
		cfg.Output.Stdout = true
	}
	if *logLevel != "" {
		cfg.Log.Level = *logLevel
		if err := cfg.Log.Validate(); err != nil {
			return err
		}
	}
	if err := cfg.Preflight(); err != nil {
		return fileErr(*path, err)
	}
	log := newLogger(cfg.Log)
	out, files, err := openOutputs(cfg.Output)
	if err != nil {
		return err
	}
	a, err := agent.New(cfg, log, out)
	if err != nil {
		out.Close()
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	log.Info("monagent running", "version", versionString(), "config", *path, "sources", a.Sources())
	err = a.Run(ctx)
	for _, f := range files {
		st := f.Stats()
		fmt.Fprintf(os.Stderr, "monagent: wrote %d records (%d bytes) to %s\n", st.Records, st.Bytes, f.Name())
	}
	return err
}

func openOutputs(o agent.OutputConfig) (sink.Sink, []*sink.Writer, error) {
	var m sink.Multi
	var files []*sink.Writer
	if o.Stdout {
		m = append(m, sink.NewWriter("stdout", os.Stdout))
	}
	if o.File != "" {
		f, err := sink.OpenFile(o.File)
		if err != nil {
			m.Close()
			return nil, nil, err
		}
		m = append(m, f)
		files = append(files, f)
	}
	return m, files, nil
}

func newLogger(c agent.LogConfig) *slog.Logger {
	var level slog.Level
	level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}
