package main

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// BenchmarkGpsdErrorFloodLogLines measures (MONAGENT_BENCH_GPSD_FLOOD=1;
// one run, whatever b.N) the log lines a minute of the real agent under a
// gpsd flooding ERROR lines for 58 s of a 60 s run, as docs/performance.md
// reports: loglines/min, the ERROR lines sent and the log's bytes, and the
// first lines of the log. Without the variable it is skipped: the suite's
// one-iteration pass of every benchmark would spend a minute on it.
func BenchmarkGpsdErrorFloodLogLines(b *testing.B) {
	if os.Getenv("MONAGENT_BENCH_GPSD_FLOOD") == "" {
		b.Skip("a one-minute measurement: set MONAGENT_BENCH_GPSD_FLOOD=1")
	}
	t := b
	const run, flood = 60 * time.Second, 58 * time.Second
	g := startFloodingGpsd(t, 0, flood)
	dir := t.TempDir()
	cmd := command("run", "--config", gnssAgentConfig(t, dir, g.Addr, ""), "--duration", run.String())
	cmd.Dir = dir
	cmd.Stdout = io.Discard
	errs, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var lines, bytes int
	var first strings.Builder // the first 20 lines, 300 bytes of each
	r := bufio.NewReaderSize(errs, 1<<20)
	for {
		l, err := r.ReadSlice('\n')
		bytes += len(l)
		if lines < 20 && first.Len() < 20*300 && len(l) > 0 {
			first.Write(l[:min(len(l)-1, 300)])
			if err != bufio.ErrBufferFull {
				first.WriteByte('\n')
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
		lines++
	}
	cmd.Wait()
	t.Logf("%v run, gpsd flooding for %v: %d ERROR lines sent, %d log lines (%d bytes); the first lines:\n%s",
		run, flood, g.Sent.Load(), lines, bytes, first.String())
	for b.Loop() { // the run above is the measurement: once
	}
	b.ReportMetric(float64(lines)/run.Minutes(), "loglines/min")
	b.ReportMetric(float64(g.Sent.Load()), "errors_sent")
	b.ReportMetric(float64(bytes), "log_bytes")
}
