package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/timeapi"
	"github.com/monagent/monagent/timebase"
)

// timeOpts are time's flags: the segment (by --config or --path), the
// section, and how to look.
type timeOpts struct {
	config, path, clock string
	json                bool
	watch               time.Duration
}

func timeFlags() (*flag.FlagSet, *timeOpts) {
	o := timeOpts{}
	fs := flag.NewFlagSet("time", flag.ContinueOnError)
	fs.StringVar(&o.path, "path", "", "the time segment's `PATH` (without it or --config: $MONAGENT_TIME_PATH, else timeapi.path's default)")
	fs.StringVar(&o.config, "config", "", "the running agent's configuration `FILE` (its timeapi.path is read)")
	fs.StringVar(&o.clock, "clock", "system", "the section: system (the system clock's true time) or global (the HCA global timeline)")
	lookFlags(fs, &o.json, &o.watch, "print a JSON object: clock, state, earliest_ns, latest_ns, width_ns, half_width_ns, midpoint_ns, realtime_ns")
	return fs, &o
}

// The exit codes of `monagent time` (docs/timeapi.md): 0 the interval is
// valid (LOCKED or HOLDOVER); 1 it is readable but the clock is FREERUN, or
// UNKNOWN (no judged sample yet); 2 usage; 3 void (the agent stopped, stalled or died longer ago
// than timeapi.max_age, or no interval is trustworthy: its references
// disputed, none voting); 4 no segment (the agent never ran with timeapi
// on, or the path is wrong) or no such clock in it; 5 the segment is
// unreadable (malformed, a layout version this monagent does not read, no
// consistent read).
const (
	exitTimeNotValid = 1
	exitTimeVoid     = 3
	exitTimeAbsent   = 4
	exitTimeBad      = 5
)

// timeErr is an exit of `monagent time` with its code.
type timeErr struct {
	code int
	err  error
}

func (e timeErr) Error() string { return e.err.Error() }
func (e timeErr) Unwrap() error { return e.err }
func (e timeErr) ExitCode() int { return e.code }

// timeCmd handles 'monagent time'; its exit codes are above.
func timeCmd(args []string) error {
	fs, o := timeFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (o.config != "" && o.path != "") || o.watch < 0 || o.clock == "" {
		return usageError("time: want [--config FILE | --path P] [--clock NAME] [--json] [--watch DURATION]")
	}
	if o.watch > 0 && o.watch < minWatch {
		return usageError(fmt.Sprintf("time: --watch %v: want at least %v (or 0 for one look)", o.watch, minWatch))
	}
	path := o.path
	switch {
	case o.config != "":
		cfg, err := agent.Load(o.config)
		if err != nil {
			return err
		}
		path = cfg.TimeAPIPath()
	case path == "":
		path = timeapi.DefaultPath() // $MONAGENT_TIME_PATH, else timeapi.path's default
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var r *timeapi.Reader
	for {
		var err error
		if r == nil {
			if r, err = timeapi.Open(path); err != nil {
				r = nil
				err = openErr(path, err)
			}
		}
		if r != nil {
			err = showTime(os.Stdout, r, path, o.clock, o.json)
		} else {
			showTimeErr(os.Stdout, path, o.clock, o.json, err)
		}
		if o.watch == 0 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(o.watch):
		}
	}
}

// openErr is the exit of a segment that cannot be opened.
func openErr(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return timeErr{exitTimeAbsent, fmt.Errorf("time: %s: no time segment (is the agent running with timeapi on?): %w", path, err)}
	}
	return readErr(path, "", err)
}

// timeDoc is --json's object.
type timeDoc struct {
	Clock       string `json:"clock"`
	Path        string `json:"path"`
	State       string `json:"state"`
	Void        bool   `json:"void"`
	EarliestNS  *int64 `json:"earliest_ns,omitempty"`
	LatestNS    *int64 `json:"latest_ns,omitempty"`
	WidthNS     *int64 `json:"width_ns,omitempty"`
	HalfWidthNS *int64 `json:"half_width_ns,omitempty"`
	MidpointNS  *int64 `json:"midpoint_ns,omitempty"`
	// RealtimeNS is CLOCK_REALTIME at the interval's instant (read
	// between two reads of the segment's base clock, the narrowest of
	// three): midpoint_ns − realtime_ns is how far the system clock is
	// behind the truth, however long the command was preempted.
	RealtimeNS int64  `json:"realtime_ns"`
	Error      string `json:"error,omitempty"`
}

// showTime reads clock's interval from r and prints it.
func showTime(w io.Writer, r *timeapi.Reader, path, clock string, asJSON bool) error {
	// The interval at the instant REALTIME was read, not a moment apart:
	// under emulation and load the two reads were 0.8 ms apart, which the
	// difference midpoint − REALTIME took for the clock's error.
	o, err := timebase.ReadOffset(timebase.SystemClock.Now, timebase.MonotonicRaw, timebase.Realtime, 3)
	rt := o.MidNS + o.OffsetNS
	var iv timeapi.Interval
	if err == nil {
		iv, err = r.Past(clock, timeapi.MonotonicRaw, o.MidNS)
	} else {
		rt = timebase.RealtimeNS()
	}
	if err != nil {
		err = readErr(path, clock, err)
		showTimeErr(w, path, clock, asJSON, err)
		return err
	}
	width := iv.LatestNS - iv.EarliestNS
	half, mid := iv.HalfWidthNS(), iv.MidNS()
	d := timeDoc{Clock: clock, Path: path, State: iv.State.String(), EarliestNS: &iv.EarliestNS, LatestNS: &iv.LatestNS,
		WidthNS: &width, HalfWidthNS: &half, MidpointNS: &mid, RealtimeNS: rt}
	if asJSON {
		if err := json.NewEncoder(w).Encode(d); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(w, "%s: %s [%s, %s] width %v (±%v), midpoint − REALTIME %v\n", clock, d.State, stamp(iv.EarliestNS), stamp(iv.LatestNS),
			time.Duration(width), time.Duration(half), time.Duration(mid-rt))
	}
	if iv.State != timeapi.Locked && iv.State != timeapi.Holdover {
		return timeErr{exitTimeNotValid, fmt.Errorf("time: %s is %s: not a valid time (LOCKED or HOLDOVER)", clock, d.State)}
	}
	return nil
}

// showTimeErr prints a read that failed.
func showTimeErr(w io.Writer, path, clock string, asJSON bool, err error) {
	var te timeErr
	errors.As(err, &te)
	if !asJSON {
		return // said on standard error by main
	}
	rt := timebase.RealtimeNS()
	d := timeDoc{Clock: clock, Path: path, State: map[int]string{exitTimeVoid: "VOID", exitTimeNotValid: "UNKNOWN", exitTimeBad: "MALFORMED"}[te.code],
		Void: te.code == exitTimeVoid, RealtimeNS: rt, Error: err.Error()}
	if d.State == "" {
		d.State = "ABSENT"
	}
	json.NewEncoder(w).Encode(d)
}

// readErr is the exit of a read that failed.
func readErr(path, clock string, err error) error {
	switch {
	case errors.Is(err, timeapi.ErrVoid):
		return timeErr{exitTimeVoid, fmt.Errorf("time: %s in %s is void (the agent stopped, stalled or has no trustworthy interval): %w", clock, path, err)}
	case errors.Is(err, timeapi.ErrUnknownClock):
		return timeErr{exitTimeAbsent, fmt.Errorf("time: %s: %w", path, err)}
	case errors.Is(err, timeapi.ErrNotInitialised):
		return timeErr{exitTimeNotValid, fmt.Errorf("time: %s in %s: %w (the agent is starting, or has judged no sample yet)", clock, path, err)}
	}
	return timeErr{exitTimeBad, fmt.Errorf("time: %s: %w", path, err)}
}

// stamp is a UTC time with ns.
func stamp(ns int64) string { return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000000000Z") }
