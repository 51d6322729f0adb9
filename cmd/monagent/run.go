package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/monagent/monagent/agent"
)

type runOpts struct {
	path, logLevel string
	http           optString
	duration       time.Duration
	stdout         bool
}

func runFlags() (*flag.FlagSet, *runOpts) {
	var o runOpts
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&o.path, "config", "", "configuration `FILE` (YAML), required")
	fs.DurationVar(&o.duration, "duration", 0, "stop after this long, e.g. 10s (0: run until SIGINT/SIGTERM)")
	fs.BoolVar(&o.stdout, "stdout", false, "also write records to standard output")
	fs.StringVar(&o.logLevel, "log-level", "", "override log.level with `LEVEL`: debug, info, warn or error")
	fs.Var(&o.http, "http", "override http.listen with `ADDR` (host:port; \"\" turns /metrics and /status off)")
	return fs, &o
}

func runCmd(args []string) error {
	fs, o := runFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	path := &o.path // the configuration file
	if *path == "" {
		return usageError("run: --config FILE is required (see 'monagent run --help')")
	}
	if o.duration < 0 {
		return usageError(fmt.Sprintf("run: --duration %v: want a positive duration, or 0 to run until SIGINT/SIGTERM", o.duration))
	}
	cfg, err := agent.Load(*path)
	if err != nil {
		return err
	}
	if o.stdout {
		cfg.Output.Stdout = true
	}
	if o.http.set {
		cfg.HTTP.Listen = o.http.v
		if err := cfg.Validate(); err != nil {
			return usageError(fmt.Sprintf("run: --http %q: want host:port, or \"\" for none", o.http.v))
		}
	}
	if o.logLevel != "" {
		cfg.Log.Level = o.logLevel
		if err := cfg.Log.Validate(); err != nil {
			return usageError(fmt.Sprintf("run: --log-level %q: want debug, info, warn or error", o.logLevel))
		}
	}
	if err := cfg.Preflight(); err != nil {
		return fileErr(*path, err)
	}
	// A reader of stdout or stderr that goes away (`monagent run --stdout |
	// head`) must not kill the agent: with SIGPIPE ignored a write to the
	// closed pipe fails with EPIPE, which the stdout output counts as it
	// counts a gone FIFO reader, and log lines to a closed stderr are lost
	// while the agent goes on measuring.
	signal.Ignore(syscall.SIGPIPE)
	log := newLogger(cfg.Log)
	if os.Getenv("GOMEMLIMIT") == "" {
		// The runtime collects harder near the limit rather than grow past it.
		debug.SetMemoryLimit(cfg.Memory.Limit)
	}
	a, err := agent.New(cfg, log)
	if err != nil {
		return err
	}
	a.SetVersion(versionString())
	ctx, stop := stopOnSignals(a, log, cfg.Log)
	defer stop()
	if o.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.duration)
		defer cancel()
	}
	attrs := []any{"version", versionString(), "config", *path, "sources", a.Sources()}
	if cfg.Spool.Enabled {
		attrs = append(attrs, "spool", cfg.Spool.Dir)
	}
	attrs = append(attrs, "memory", cfg.MemoryNeed().String())
	if cfg.Influx.Enabled {
		attrs = append(attrs, "influx", cfg.Influx.URL)
	}
	log.Info("monagent running", attrs...)
	err = a.Run(ctx)
	summarize(log, cfg.Log, a.Outputs().Summary())
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

// summarize writes the end-of-run summary: "monagent: " lines on stderr, or
// with log.format json one JSON log record each (field summary), so that a
// collector parsing the log reads them too.
func summarize(log *slog.Logger, c agent.LogConfig, lines []string) {
	for _, line := range lines {
		if c.Format == "json" {
			log.Info("run summary", "summary", line)
			continue
		}
		fmt.Fprintln(os.Stderr, "monagent:", line)
	}
}

// stopOnSignals returns a context cancelled by the first SIGINT or SIGTERM:
// the agent stops its sources, writes what is queued and exits (within 2 s,
// whatever the sources' timeouts). A second signal does not wait: the spool
// writes and fsyncs what it holds and the process exits at once.
func stopOnSignals(a *agent.Agent, log *slog.Logger, logCfg agent.LogConfig) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			log.Info("stopping: sources stop, queued records are written; a second signal exits at once", "signal", s.String())
			cancel()
		case <-done:
			return
		}
		select {
		case s := <-sigs:
			log.Warn("second signal: exiting now", "signal", s.String())
			summarize(log, logCfg, a.Abort())
			os.Exit(exitFail)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// optString is a string flag that knows whether it was given (so that "" can
// be given).
type optString struct {
	v   string
	set bool
}

func (o *optString) String() string     { return o.v }
func (o *optString) Set(s string) error { o.v, o.set = s, true; return nil }
