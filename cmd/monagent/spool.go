package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

const spoolUsage = "spool: want 'spool replay-deadletter --config FILE [--dry-run]' or 'spool stats --config FILE'"

// spoolFlags are the spool subcommands' flags.
func spoolFlags() (fs *flag.FlagSet, config *string, dry *bool) {
	fs = flag.NewFlagSet("spool", flag.ContinueOnError)
	config = fs.String("config", "", "the agent's configuration `FILE` (spool and influx sections)")
	dry = fs.Bool("dry-run", false, "count the lines without queueing them (replay-deadletter)")
	return fs, config, dry
}

// spoolCmd handles 'monagent spool replay-deadletter|stats --config FILE'.
func spoolCmd(args []string) error {
	fs, config, dry := spoolFlags()
	if len(args) == 0 {
		return usageError(spoolUsage)
	}
	if strings.HasPrefix(args[0], "-") { // --help, or a flag before the subcommand
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		return usageError(spoolUsage)
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *config == "" {
		return usageError("spool: --config FILE is required (see 'monagent spool --help')")
	}
	switch args[0] {
	case "replay-deadletter":
		return replayDeadLetter(os.Stdout, *config, *dry)
	case "stats":
		return spoolStats(os.Stdout, *config)
	}
	return usageError(fmt.Sprintf("%s, not %q", spoolUsage, args[0]))
}

// spoolConfig loads the config at path, which must enable the spool.
func spoolConfig(path string) (agent.Config, error) {
	cfg, err := agent.Load(path)
	if err == nil && !cfg.Spool.Enabled {
		err = usageError(path + ": spool.enabled is false: there is no spool")
	}
	return cfg, err
}

// openSpool opens the spool of the config at path for writing; it fails while
// the agent has it open.
func openSpool(path string) (*spool.Spool, agent.Config, error) {
	cfg, err := spoolConfig(path)
	if err != nil {
		return nil, cfg, err
	}
	sc := cfg.Spool
	sp, err := spool.Open(spool.Options{Dir: sc.Dir, SegmentBytes: sc.SegmentBytes, MaxBytes: sc.MaxBytes,
		FlushInterval: sc.FlushInterval, FsyncInterval: sc.FsyncInterval, Compress: sc.Compress})
	return sp, cfg, err
}

func replayDeadLetter(w io.Writer, path string, dry bool) error {
	sp, cfg, err := openSpool(path)
	if err != nil {
		return err
	}
	dl := cfg.Influx.DeadLetter
	if dl == "" {
		dl = filepath.Join(cfg.Spool.Dir, "deadletter.lp")
	}
	res, err := influx.ReplayDeadLetter(sp, dl, dry, time.Now())
	if cerr := sp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		return err
	case dry:
		fmt.Fprintf(w, "%s: %d lines would be queued into %s\n", dl, res.Lines, cfg.Spool.Dir)
	case res.MovedTo == "":
		fmt.Fprintf(w, "%s: nothing to replay\n", dl)
	default:
		fmt.Fprintf(w, "queued %d lines from %s into %s; the file is now %s\n", res.Lines, dl, cfg.Spool.Dir, res.MovedTo)
	}
	if !cfg.Influx.Enabled && res.Lines > 0 {
		fmt.Fprintf(w, "warning: %s enables no influx section: the lines stay in the spool until an agent with one ships them\n", path)
	}
	return nil
}

// spoolStats prints what the spool's directory holds. It reads without the
// spool's lock and writes nothing (spool.ReadDir), so it runs beside the agent.
func spoolStats(w io.Writer, path string) error {
	cfg, err := spoolConfig(path)
	if err != nil {
		return err
	}
	if err := spool.IsDir(cfg.Spool.Dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w (has the agent run with this configuration? a relative spool.dir is from its working directory)", err)
	} else if err != nil {
		return fmt.Errorf("%s: spool.dir: %w", path, err)
	}
	st, err := spool.ReadDir(cfg.Spool.Dir, nil)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "spool %s: %d points pending in %d segments (%d bytes), acknowledged through seq %d",
		cfg.Spool.Dir, st.Pending, st.Segments, st.Bytes, st.Acked)
	if st.TailBytes > 0 {
		fmt.Fprintf(w, "; %d bytes after the last whole entries (being written, or a torn tail the next start cuts)", st.TailBytes)
	}
	fmt.Fprintln(w)
	return nil
}
