package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/monagent/monagent/agent"
	"github.com/monagent/monagent/report"
	"github.com/monagent/monagent/sink/spool"
)

// exportOpts are the flags of 'spool export'.
type exportOpts struct {
	start, stop, measurement, output string
}

func exportFlags(fs *flag.FlagSet) *exportOpts {
	o := &exportOpts{}
	fs.StringVar(&o.start, "start", "", "export: only records at or after `TIME`: RFC 3339 or a duration before now, e.g. -1h (empty: no bound)")
	fs.StringVar(&o.stop, "stop", "", "export: only records at or before `TIME`: RFC 3339 or a duration before now (empty: no bound)")
	fs.StringVar(&o.measurement, "measurement", "", "export: only records of measurement `M` (empty: all)")
	fs.StringVar(&o.output, "output", "", "export: write to `FILE` ('-' or empty: standard output)")
	return o
}

// onlyFor refuses the flags of one subcommand given to another.
func (o *exportOpts) onlyFor(fs *flag.FlagSet, sub string) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		export := f.Name == "start" || f.Name == "stop" || f.Name == "measurement" || f.Name == "output"
		if err == nil && (export && sub != "export" || f.Name == "dry-run" && sub != "replay-deadletter") {
			err = usageError(fmt.Sprintf("spool %s: no --%s (see 'monagent spool --help')", sub, f.Name))
		}
	})
	return err
}

// run writes the records of the spool of the config at path (none:
// ./data/spool, the default spool.dir) as line protocol. It reads as 'spool
// stats' does, without the lock, so it runs beside the agent.
func (o *exportOpts) run(path string) error {
	now := time.Now()
	f := report.ExportFilter{Measurement: o.measurement}
	var err error
	if f.Start, err = report.ParseTime(o.start, now); err == nil {
		f.Stop, err = report.ParseTime(o.stop, now)
	}
	if err == nil && f.Start != 0 && f.Stop != 0 && f.Start > f.Stop {
		err = fmt.Errorf("--start %s is after --stop %s: want start <= stop", o.start, o.stop)
	}
	if err != nil {
		return usageError("spool export: " + err.Error() + " (see 'monagent spool --help')")
	}
	dir := "./data/spool"
	if path != "" {
		cfg, err := agent.Load(path)
		if err != nil {
			return err
		}
		dir = cfg.Spool.Dir
	}
	if err := spoolDir(dir, path); err != nil {
		return err
	}
	w, finish, err := exportOutput(o.output)
	if err != nil {
		return err
	}
	st, err := report.ExportSpool(dir, f, w)
	if ferr := finish(err); err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("spool export: %w", err)
	}
	if st.Malformed > 0 {
		fmt.Fprintf(os.Stderr, "spool export: skipped %d lines that are not line protocol; the first: %s\n", st.Malformed, st.FirstMalformed)
	}
	if st.Vanished > 0 || st.TailBytes > 0 {
		fmt.Fprintf(os.Stderr, "spool export: skipped %d segments shipped and deleted while being read, %d bytes of tails being written or torn\n", st.Vanished, st.TailBytes)
	}
	return nil
}

// spoolDir checks that dir, the spool.dir of the config at path ("" for the
// default), is a spool: one line naming what is wrong.
func spoolDir(dir, path string) error {
	err := spool.IsDir(dir)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist) && path == "":
		return fmt.Errorf("%w (the default spool.dir; give the agent's --config FILE)", err)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w (has the agent run with this configuration? a relative spool.dir is from its working directory)", err)
	case path != "":
		return fmt.Errorf("%s: spool.dir: %w", path, err)
	}
	return err
}

// exportOutput opens the export's output; finish flushes and closes it,
// removing a file left incomplete by an error.
func exportOutput(name string) (io.Writer, func(error) error, error) {
	if name == "" || name == "-" {
		bw := bufio.NewWriterSize(os.Stdout, 64<<10)
		return bw, func(error) error { return bw.Flush() }, nil
	}
	f, err := os.Create(name)
	if err != nil {
		return nil, nil, fmt.Errorf("spool export: --output: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	return bw, func(werr error) error {
		err := bw.Flush()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if werr != nil || err != nil {
			os.Remove(name)
		}
		return err
	}, nil
}
