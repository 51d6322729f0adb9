package main

import (
	"context"
	"encoding/json"
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
	fs.BoolVar(&o.json, "json", false, "print the /status document as JSON")
	fs.DurationVar(&o.watch, "watch", 0, "print again every `DURATION` until interrupted")
	return fs, &o
}

// errNotLocked is status's exit 1 when the agent answered.
type errNotLocked struct{ n, of int }

func (e errNotLocked) Error() string {
	if e.of == 0 {
		return "status: no judged clocks (turn on a source's judge: section)"
	}
	return fmt.Sprintf("status: %d of %d judged clocks not LOCKED", e.n, e.of)
}

// statusCmd handles 'monagent status': exit 0 when every judged clock is
// LOCKED, 1 when any is not or the agent cannot be reached, 2 for usage.
func statusCmd(args []string) error {
	fs, o := statusFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 || (o.config != "" && o.url != "") || o.watch < 0 {
		return usageError("status: want [--config FILE | --url URL] [--json] [--watch DURATION]")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for {
		err := showStatus(ctx, os.Stdout, base, o.json)
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

func showStatus(ctx context.Context, w io.Writer, base string, asJSON bool) error {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	d, err := status.Fetch(rctx, base)
	if err != nil {
		return fmt.Errorf("%w (is the agent running with http.listen?)", err)
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
	if n := d.NotLocked(); n > 0 || len(d.Clocks) == 0 {
		return errNotLocked{n, len(d.Clocks)}
	}
	return nil
}
