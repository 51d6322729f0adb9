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
	a, err := agent.New(cfg, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	log.Info("monagent running", "version", versionString(), "config", *path, "sources", a.Sources(), "spool", cfg.Spool.Dir, "influx", cfg.Influx.URL)
	err = a.Run(ctx)
	for _, line := range a.Outputs().Summary() {
		fmt.Fprintln(os.Stderr, "monagent:", line)
	}
	return err
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
