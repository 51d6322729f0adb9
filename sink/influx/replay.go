package influx

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"time"

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
