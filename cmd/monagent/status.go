package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/status"
)

type statusOpts struct {
	config, url string
	json        bool
	watch       time.Duration
}

func statusFlags() (*flag.FlagSet, *statusOpts) {
	var o statusOpts
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.StringVar(&o.config, "config", "", "the running agent's configuration `FILE` (its http.listen is asked)")
	fs.StringVar(&o.url, "url", "", "the agent's endpoint `URL`, e.g. http://boarda:9469 (without it or --config: http://"+agent.DefaultHTTPListen+")")
	lookFlags(fs, &o.json, &o.watch, "print the /status document as JSON")
	return fs, &o
}

// lookFlags are the --json and --watch of a command that looks at the
// agent (status, time).
func lookFlags(fs *flag.FlagSet, asJSON *bool, watch *time.Duration, jsonUsage string) {
	fs.BoolVar(asJSON, "json", false, jsonUsage)
	fs.DurationVar(watch, "watch", 0, "print again every `DURATION` until interrupted")
}

// The exit codes of `monagent status`, as a monitoring plugin's (Nagios,
// Icinga, Sensu, a cron job) read them: 0 every judged clock LOCKED, 1 some
// not LOCKED (or none judged, or a clock's combined state not LOCKED, as a
// disputed one is, or a reference named a falseticker), 2 usage, 3 no answer from a monagent (not
// reachable, an HTTP error, or a server that is not monagent): the state is
// unknown.
const exitUnknown = 3

// minWatch is the shortest --watch: faster adds load to the agent and shows
// nothing new (its self-metrics and most judges tick every second or more).
const minWatch = 100 * time.Millisecond

// errNotLocked is status's exit 1 when the agent answered.
type errNotLocked struct{ n, of, combined, falsetickers int }

func (e errNotLocked) Error() string {
	if e.of == 0 {
		return "status: no judged clocks (turn on a source's judge: section)"
	}
	s := fmt.Sprintf("status: %d of %d judged clocks not LOCKED", e.n, e.of)
	if e.combined > 0 {
		s += fmt.Sprintf(", %d combined (cross-checked) not LOCKED", e.combined)
	}
	if e.falsetickers > 0 {
		s += fmt.Sprintf(", %d references named (falseticker or disputed)", e.falsetickers)
	}
	return s
}

// errUnknown is status's exit 3: no monagent answered.
type errUnknown struct{ err error }

func (e errUnknown) Error() string { return e.err.Error() }
func (e errUnknown) Unwrap() error { return e.err }
func (e errUnknown) ExitCode() int { return exitUnknown }

// statusCmd handles 'monagent status'; its exit codes are above.
func statusCmd(args []string) error {
	fs, o := statusFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (o.config != "" && o.url != "") || o.watch < 0 {
		return usageError("status: want [--config FILE | --url URL] [--json] [--watch DURATION]")
	}
	if o.watch > 0 && o.watch < minWatch {
		return usageError(fmt.Sprintf("status: --watch %v: want at least %v (or 0 for one look)", o.watch, minWatch))
	}
	base := "http://" + agent.DefaultHTTPListen
	switch {
	case o.url != "":
		base = o.url
	case o.config != "":
		cfg, err := agent.Load(o.config)
		if err != nil {
			return err
		}
		if cfg.HTTP.Listen == "" {
			return usageError(o.config + ": http.listen is \"\": the agent serves no status")
		}
		base = "http://" + strings.Replace(cfg.HTTP.Listen, "0.0.0.0:", "127.0.0.1:", 1)
		if strings.HasPrefix(cfg.HTTP.Listen, ":") {
			base = "http://127.0.0.1" + cfg.HTTP.Listen
		}
	}
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	if _, err := status.StatusURL(base); err != nil {
		return usageError("status: --url " + err.Error())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		err := showStatus(ctx, os.Stdout, base, o.json)
		if o.watch == 0 {
			return err
		}
		var unknown errUnknown
		if errors.As(err, &unknown) {
			// Said at once where the table was: a watcher must not take
			// the last table for the agent's state.
			fmt.Fprintf(os.Stdout, "%s: no answer at %s: %v\n", base, time.Now().UTC().Format(time.RFC3339), err)
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(o.watch):
		}
	}
}

func showStatus(ctx context.Context, w io.Writer, base string, asJSON bool) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := status.Fetch(rctx, base)
	if errors.Is(err, status.ErrNotMonagent) {
		return errUnknown{fmt.Errorf("%w (is this the address of monagent's http.listen?)", err)}
	}
	if err != nil {
		return errUnknown{fmt.Errorf("%w (is the agent running with http.listen?)", err)}
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(d)
	} else {
		err = status.Render(w, d)
	}
	if err != nil {
		return err
	}
	if len(d.Clocks) == 0 && d.Reference != "" {
		return nil // a reference (HCA rank 0) with nothing of its own to judge: all is as it should be
	}
	if n, c, f := d.NotLocked(); n+c+f > 0 || len(d.Clocks) == 0 {
		return errNotLocked{n, len(d.Clocks), c, f}
	}
	return nil
}
