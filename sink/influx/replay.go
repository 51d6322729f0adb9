package influx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/monagent/monagent/sink/spool"
)

// ReplayResult says what ReplayDeadLetter did.
type ReplayResult struct {
	Lines   int    // lines queued (or, dry, that would be)
	MovedTo string // where the replayed file went; "" when dry or absent
}

// ReplayDeadLetter appends the lines of the dead-letter file at path (not the
// '#' lines naming their causes) to sp, fsyncs the spool and then renames the
// file to path.replayed-<UTC time> so that it is never replayed twice. With
// dryRun it only counts. A missing file is zero lines, not an error. Lines the
// server still rejects come back to a new dead-letter file. A crash between the
// fsync and the rename replays the file again: InfluxDB stores each point once.
func ReplayDeadLetter(sp *spool.Spool, path string, dryRun bool, now time.Time) (ReplayResult, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return ReplayResult{}, nil
	}
	if err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w", path, err)
	}
	if err := checkLines(b); err != nil {
		return ReplayResult{}, fmt.Errorf("replay %s: %w (nothing queued: fix or remove the line)", path, err)
	}
	var res ReplayResult
	const chunk = 1 << 20
	for len(b) > 0 {
		cut := len(b)
		if cut > chunk {
			if i := bytes.IndexByte(b[chunk:], '\n'); i >= 0 {
				cut = chunk + i + 1
			}
		}
		part := b[:cut]
		b = b[cut:]
		if dryRun {
			for _, l := range bytes.Split(part, []byte("\n")) {
				if len(bytes.TrimSpace(l)) > 0 && l[0] != '#' {
					res.Lines++
				}
			}
			continue
		}
		n, err := sp.AppendLines(part)
		if err != nil {
			return res, fmt.Errorf("replay %s: queued %d lines: %w", path, res.Lines, err)
		}
		res.Lines += n
		if err := sp.Flush(); err != nil {
			return res, fmt.Errorf("replay %s: queued %d lines: %w", path, res.Lines, err)
		}
	}
	if dryRun {
		return res, nil
	}
	if err := sp.Sync(); err != nil {
		return res, fmt.Errorf("replay %s: %w", path, err)
	}
	moved := fmt.Sprintf("%s.replayed-%s", path, now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Rename(path, moved); err != nil {
		return res, fmt.Errorf("replay %s: lines queued but the file could not be moved aside (move it before the next replay): %w", path, err)
	}
	res.MovedTo = moved
	return res, nil
}

// checkLines finds the first line of b (not a '#' comment, not blank) that is
// not InfluxDB line protocol: a file edited by hand, or not a dead-letter file
// at all, is refused whole rather than queued for a server to reject.
func checkLines(b []byte) error {
	for n := 1; len(b) > 0; n++ {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		if err := checkLine(line); err != nil {
			return fmt.Errorf("line %d is not line protocol: %w", n, err)
		}
	}
	return nil
}

// checkLine decodes one line of line protocol: a measurement, its tags, at
// least one field, a timestamp (the dead-letter file keeps each point's).
func checkLine(line []byte) error {
	d := lineprotocol.NewDecoderWithBytes(line)
	if !d.Next() {
		return errors.New("empty")
	}
	if _, err := d.Measurement(); err != nil {
		return err
	}
	for {
		k, _, err := d.NextTag()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
	}
	fields := 0
	for {
		k, _, err := d.NextField()
		if err != nil {
			return err
		}
		if k == nil {
			break
		}
		fields++
	}
	if fields == 0 {
		return errors.New("no field")
	}
	if _, err := d.Time(lineprotocol.Nanosecond, time.Time{}); err != nil {
		return err
	}
	if d.Next() {
		return errors.New("more than one line")
	}
	return d.Err()
}
