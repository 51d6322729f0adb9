package agent

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/gnss"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
)

// scriptedGpsd is a gpsd connection that returns its lines, then end
// when it is set (a connection that fails), else closes drained (when set)
// and blocks until its context ends. pace, when set, may hold each line
// back (until the ring has room).
type scriptedGpsd struct {
	ctx     context.Context
	lines   []string
	reads   []int64
	dec     gnss.Decoder
	end     error
	drained chan struct{}
	pace    func() // when set, runs before each line
}

func (g *scriptedGpsd) Next(m *gnss.Message) (int64, error) {
	if len(g.lines) == 0 {
		if g.end != nil {
			return 0, g.end
		}
		if g.drained != nil {
			close(g.drained)
			g.drained = nil
		}
		<-g.ctx.Done()
		return 0, g.ctx.Err()
	}
	if g.pace != nil {
		g.pace()
	}
	line, at := g.lines[0], g.reads[0]
	g.lines, g.reads = g.lines[1:], g.reads[1:]
	return at, g.dec.Decode([]byte(line), m)
}

func (g *scriptedGpsd) Close() error { return nil }

// runGNSS runs a gnss source over the lines (each read at its time) and
// returns its records once all are collected.
func runGNSS(t *testing.T, c GNSSConfig, lines []string, reads []int64) (*gnssSource, []record.Record) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := newGNSSSource(c, slog.New(slog.NewTextHandler(io.Discard, nil)), func(ctx context.Context) (gnssConn, error) {
		return &scriptedGpsd{ctx: ctx, lines: lines, reads: reads}, nil
	})
	if err := s.judge(judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)}), c); err != nil {
		t.Fatal(err)
	}
	es, err := collect.Decode(s.name, c.Interval, c.Ring, s)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { es.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	want := uint64(0)
	for _, l := range lines {
		var m gnss.Message
		var d gnss.Decoder
		if d.Decode([]byte(l), &m) == nil && !m.Class.Logged() {
			want++
		}
	}
	waitFor(t, "the lines queued", func() bool { return es.Queue().Received() >= want })
	return s, collectAll(t, es)
}

func ppsLine(real, clock int64) string {
	return `{"class":"PPS","device":"/dev/ttyS0","real_sec":` + itoa(real/1e9) + `,"real_nsec":` + itoa(real%1e9) +
		`,"clock_sec":` + itoa(clock/1e9) + `,"clock_nsec":` + itoa(clock%1e9) + `,"precision":-20}`
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Judged against PPS: LOCKED after min_samples edges with a 3D fix, the
// offset clock − real and the bound |offset| + latency; a TPV without a 3D
// fix takes it out of LOCKED at the next edge. Records: TOFF and PPS at
// clock_ns, TPV and SKY at the read time, two TPVs read at once 1 ns apart.
func TestGNSSJudgedOnPPSWithA3DFix(t *testing.T) {
	c := Default().GNSS
	c.Enabled = true
	var lines []string
	var reads []int64
	add := func(line string, read int64) { lines, reads = append(lines, line), append(reads, read) }
	add(`{"class":"VERSION","release":"3.22"}`, sec-1)
	add(`{"class":"TPV","device":"/dev/ttyS0","mode":3,"time":"2026-11-25T09:12:35.000Z"}`, sec)
	add(`{"class":"TPV","device":"/dev/ttyS0","mode":3}`, sec)
	add(`{"class":"SKY","device":"/dev/ttyS0","nSat":10,"uSat":8}`, sec)
	offs := []int64{-3_000, 5_000, -7_000, 2_000}
	for i, off := range offs {
		real := sec + int64(i+1)*1e9
		add(ppsLine(real, real+off), real+off+50_000)
		add(`{"class":"TPV","device":"/dev/ttyS0","mode":3}`, real+200e6)
	}
	add(`{"class":"TPV","device":"/dev/ttyS0","mode":2}`, sec+5e9+100e6)
	add(ppsLine(sec+6e9, sec+6e9+1_000), sec+6e9+50_000)
	add(`garbage`, sec+7e9)
	s, recs := runGNSS(t, c, lines, reads)
	checkRecordRules(t, recs)
	var states []string
	var tpvTimes []int64
	for _, r := range recs {
		switch {
		case r.Measurement == "sync_state":
			to, _ := r.Field("to")
			states = append(states, to.S)
		case tagOf(r, "class") == "pps":
			clock, _ := fieldInt(r, "clock_ns")
			real, _ := fieldInt(r, "real_ns")
			off, _ := fieldInt(r, "offset_ns")
			if r.TimeNS != clock || off != clock-real || tagOf(r, "device") != "/dev/ttyS0" {
				t.Errorf("pps record at %d: clock %d, real %d, offset %d", r.TimeNS, clock, real, off)
			}
		case tagOf(r, "class") == "tpv":
			tpvTimes = append(tpvTimes, r.TimeNS)
		case tagOf(r, "class") == "sky":
			seen, _ := fieldInt(r, "satellites_seen")
			used, _ := fieldInt(r, "satellites_used")
			if seen != 10 || used != 8 || r.TimeNS != sec {
				t.Errorf("sky at %d: seen %d used %d; want 10, 8 at its read time", r.TimeNS, seen, used)
			}
		}
	}
	if len(tpvTimes) < 2 || tpvTimes[0] != sec || tpvTimes[1] != sec+1 {
		t.Errorf("tpv times %v: want the read time, then 1 ns after it", tpvTimes)
	}
	if len(states) != 2 || states[0] != "LOCKED" || states[1] == "LOCKED" {
		t.Fatalf("transitions %v, want LOCKED, then out of it after the 2D fix", states)
	}
	// Out of LOCKED, the bound is predicted from the last edge with a 3D
	// fix, and the offset shown is that edge's (2000 ns): the 2D edge
	// (1000 ns) is its last sample, in its records.
	if v := s.devices["/dev/ttyS0"].judged.Judged().View(sec + 6e9 + 1_000); v.OffsetNS != 2_000 || v.State == judge.Locked || v.LastSampleNS != sec+6e9+1_000 {
		t.Errorf("after the 2D fix: %+v; want the last 3D edge's offset 2000 ns, out of LOCKED, the 2D edge's time", v)
	}
	self := record.Record{Fields: s.Self()}
	if n, _ := fieldInt(self, "garbage_lines"); n != 1 {
		t.Errorf("garbage_lines %d, want 1", n)
	}
	if n, _ := fieldInt(self, "logged_messages"); n != 1 {
		t.Errorf("logged_messages %d, want 1", n)
	}
}

// The bound of a PPS sample is |clock − real| + gnss.latency.
func TestGNSSBoundIsOffsetPlusLatency(t *testing.T) {
	c := Default().GNSS
	c.Enabled, c.Judge.MinSamples = true, 1
	_, recs := runGNSS(t, c, []string{`{"class":"TPV","device":"/dev/ttyS0","mode":3}`, ppsLine(sec+1e9, sec+1e9-30_000)}, []int64{sec, sec + 1e9})
	for _, r := range recs {
		if r.Measurement == "sync_state" {
			off, _ := fieldInt(r, "offset_ns")
			bound, _ := fieldInt(r, "bound_ns")
			if off != -30_000 || bound != 30_000+int64(c.Latency) {
				t.Errorf("offset %d, bound %d; want -30000, %d", off, bound, 30_000+int64(c.Latency))
			}
			return
		}
	}
	t.Error("no sync_state")
}

// With PPS the reference, TOFF messages that keep coming without a PPS for
// three seconds are missed samples: FREERUN, reference lost.
func TestGNSSTOFFWithoutPPSIsAMissedReference(t *testing.T) {
	c := Default().GNSS
	c.Enabled = true
	var lines []string
	var reads []int64
	lines, reads = append(lines, `{"class":"TPV","device":"/dev/pts/1","mode":3}`), append(reads, sec)
	for i := range int64(5) {
		real := sec + (i+1)*1e9
		lines = append(lines, `{"class":"TOFF","device":"/dev/pts/1","real_sec":`+itoa(real/1e9)+`,"real_nsec":0,"clock_sec":`+itoa(real/1e9)+`,"clock_nsec":100000000}`)
		reads = append(reads, real+1e8)
	}
	s, _ := runGNSS(t, c, lines, reads)
	if v := s.devices["/dev/pts/1"].judged.Judged().View(sec + 5e9); v.State != judge.Freerun || v.SinceNS != sec+5e9+1e8 {
		t.Errorf("%s since %d, want FREERUN at the first TOFF more than 3 s after the first (%d)", v.State, v.SinceNS, sec+5e9+1e8)
	}
}
