package report

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/influxdata/line-protocol/v2/lineprotocol"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// Issue 20 item 12: a report reads the spool of a running agent whose shipper
// acknowledges (and so deletes) segments while the report lists and reads
// them. One entry per segment makes every acknowledgement delete a file.
func TestReadSpoolBesideARunningSpool(t *testing.T) {
	dir := t.TempDir()
	sp, err := spool.Open(spool.Options{Dir: dir, SegmentBytes: 1, FlushInterval: time.Millisecond, FsyncInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { // the agent's records
		defer wg.Done()
		for i := int64(1); ctx.Err() == nil; i++ {
			sp.Append([]record.Record{{Measurement: "m", Fields: []record.Field{record.Int("v", i)}, TimeNS: i}})
			if i%16 == 0 {
				time.Sleep(100 * time.Microsecond) // pace it: a few thousand points a second
			}
		}
	}()
	go func() { // the shipper: acknowledges every entry at once
		defer wg.Done()
		r := sp.NewReader()
		defer r.Close()
		for {
			e, err := r.Next(ctx)
			if err != nil {
				return
			}
			sp.Ack(spool.Batch{FirstSeq: e.FirstSeq, LastSeq: e.LastSeq(), Points: int(e.Points)}, 0)
		}
	}()
	var reads, empty, vanished int
	var tail int64
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); reads++ {
		c, err := NewCollector(Query{Measurement: "m", Field: "v"})
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.ReadSpoolDir(dir)
		vanished += st.Vanished
		tail += st.TailBytes
		if errors.Is(err, ErrNoData) {
			empty++ // every segment acknowledged at this moment
			continue
		} else if err != nil {
			t.Fatalf("read %d of a running spool: %v", reads, err)
		}
		ss, err := c.Finish()
		if errors.Is(err, ErrNoData) {
			empty++
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		// What was read is in order, each point once.
		for _, s := range ss {
			if s.Unsorted > 0 || s.Duplicates > 0 {
				t.Fatalf("read %d: %d points out of order, %d twice", reads, s.Unsorted, s.Duplicates)
			}
		}
	}
	t.Logf("%d reads of a running spool: %d found no segment, %d segments vanished while being read, %d bytes of tails being written",
		reads, empty, vanished, tail)
}

// TestSpoolSameTimeAsInfluxDB (issue 21 item 7): the records of sameTimeLP
// appended to a spool, in that order, give the series InfluxDB answers for
// them (TestSameTimeAsInfluxDB, TestRealInfluxd).
func TestSpoolSameTimeAsInfluxDB(t *testing.T) {
	lp, _, _ := sameTimeLP()
	dir := t.TempDir()
	sp, err := spool.Open(spool.Options{Dir: dir, FlushInterval: time.Millisecond, FsyncInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := lineprotocol.NewDecoderWithBytes([]byte(lp))
	for d.Next() {
		m, _ := d.Measurement()
		r := record.Record{Measurement: string(m)}
		for k, v, _ := d.NextTag(); k != nil; k, v, _ = d.NextTag() {
			r.Tags = append(r.Tags, record.Tag{Key: string(k), Value: string(v)})
		}
		for k, v, _ := d.NextField(); k != nil; k, v, _ = d.NextField() {
			r.Fields = append(r.Fields, record.Int(string(k), v.IntV()))
		}
		ts, _ := d.Time(lineprotocol.Nanosecond, time.Time{})
		r.TimeNS = ts.UnixNano()
		sp.Append([]record.Record{r})
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	c, _ := NewCollector(Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}})
	if _, err := c.ReadSpoolDir(dir); err != nil {
		t.Fatal(err)
	}
	ss, err := c.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ss[0].X); got != "[7 2 9]" || ss[0].Duplicates != 1 || ss[0].SameTime != 1 {
		t.Errorf("from the spool: %s, %d written again, %d at the same time; want [7 2 9], 1, 1", got, ss[0].Duplicates, ss[0].SameTime)
	}
}
