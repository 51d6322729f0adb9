package report

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/monagent/monagent/sink/spool"
)

// ExportFilter selects the records ExportSpool writes.
type ExportFilter struct {
	Measurement string // "" for every measurement
	// Start and Stop bound the record times (ns, inclusive, as Query's);
	// 0 is unbounded. With a bound, records without a time are left out.
	Start, Stop int64
}

// ExportStats is what ExportSpool read and wrote.
type ExportStats struct {
	spool.DirStats
	Records   int64 // records decoded
	Written   int64 // records written
	Malformed int64 // lines that are not line protocol, skipped
	// FirstMalformed names the first malformed line: its entry's sequence
	// numbers and the decoder's error.
	FirstMalformed string
}

// ExportSpool writes the records of the spool in dir selected by f to w as
// line protocol, oldest first: every record its segments hold, those already
// shipped but whose segment is not yet deleted included, as 'report' reads
// them. It reads through spool.ReadDir, without the lock and writing
// nothing, so it runs beside the agent. Each record is decoded and encoded
// again (the same measurement, tags, fields and time in nanoseconds, tags in
// key order); a malformed line is skipped and counted.
func ExportSpool(dir string, f ExportFilter, w io.Writer) (ExportStats, error) {
	var st ExportStats
	if err := spool.IsDir(dir); err != nil {
		return st, err
	}
	var enc lineprotocol.Encoder
	enc.SetLax(true) // the tags as the spool holds them, in whatever order
	ds, err := spool.ReadDir(dir, func(e spool.Entry) error {
		enc.Reset()
		d := lineprotocol.NewDecoderWithBytes(e.Lines)
		for d.Next() {
			st.Records++
			ok, err := exportLine(d, &enc, f)
			if err != nil { // not line protocol, or a record the encoder refuses
				st.Malformed++
				if st.FirstMalformed == "" {
					st.FirstMalformed = fmt.Sprintf("the entry of points %d..%d: %v", e.FirstSeq, e.LastSeq(), err)
				}
				enc.ClearErr()
				continue
			}
			if ok {
				st.Written++
			}
		}
		_, err := w.Write(enc.Bytes())
		return err
	})
	st.DirStats = ds
	return st, err
}

// exportLine encodes the decoder's current line into enc when f selects it.
// A line is only added to enc once it has decoded whole: a malformed line
// leaves nothing behind.
func exportLine(d *lineprotocol.Decoder, enc *lineprotocol.Encoder, f ExportFilter) (bool, error) {
	m, err := d.Measurement()
	if err != nil || (f.Measurement != "" && string(m) != f.Measurement) {
		return false, err
	}
	var tags, keys [][]byte
	for {
		k, v, err := d.NextTag()
		if err != nil {
			return false, err
		}
		if k == nil {
			break
		}
		tags = append(tags, k, v)
	}
	var vals []lineprotocol.Value
	for {
		k, v, err := d.NextField()
		if err != nil {
			return false, err
		}
		if k == nil {
			break
		}
		keys, vals = append(keys, k), append(vals, v)
	}
	tb, err := d.TimeBytes()
	if err != nil {
		return false, err
	}
	var t int64
	if len(tb) > 0 {
		if t, err = strconv.ParseInt(string(tb), 10, 64); err != nil {
			return false, &lineprotocol.DecodeError{Err: fmt.Errorf("timestamp %q: %w", tb, err)}
		}
	}
	if (f.Start != 0 || f.Stop != 0) && (len(tb) == 0 || (f.Start != 0 && t < f.Start) || (f.Stop != 0 && t > f.Stop)) {
		return false, nil
	}
	enc.StartLineRaw(m)
	for i := 0; i < len(tags); i += 2 {
		enc.AddTagRaw(tags[i], tags[i+1])
	}
	for i, k := range keys {
		enc.AddFieldRaw(k, vals[i])
	}
	var at time.Time
	if len(tb) > 0 {
		at = time.Unix(0, t)
	}
	enc.EndLine(at)
	return true, enc.Err()
}
