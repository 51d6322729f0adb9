package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/gpio"
	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// gpioEvents parses the gpio_event lines of line-protocol output: per
// record its tags and fields as text, and its time.
type gpioRecord struct {
	tags, fields map[string]string
	time         int64
}

func gpioEvents(t *testing.T, out string) []gpioRecord {
	t.Helper()
	return gpioRecords(t, out, "gpio_event")
}

// gpioRecords parses the records of one measurement.
func gpioRecords(t *testing.T, out, measurement string) []gpioRecord {
	t.Helper()
	var recs []gpioRecord
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, measurement+",") {
			continue
		}
		parts := strings.Split(l, " ") // no spaces in these tags and fields
		if len(parts) != 3 {
			t.Fatalf("line %q: want measurement+tags, fields, time", l)
		}
		r := gpioRecord{tags: map[string]string{}, fields: map[string]string{}}
		for _, kv := range strings.Split(parts[0], ",")[1:] {
			k, v, _ := strings.Cut(kv, "=")
			r.tags[k] = v
		}
		for _, kv := range strings.Split(parts[1], ",") {
			k, v, _ := strings.Cut(kv, "=")
			r.fields[k] = v
		}
		var err error
		if r.time, err = strconv.ParseInt(parts[2], 10, 64); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		recs = append(recs, r)
	}
	return recs
}

// TestRunGPIOReplayedLines: `run` with two chips replayed from fixtures, one
// a capture file of REALTIME-stamped edges (line 17 lost two edges in the
// kernel), one a FIFO fed while the agent runs with MONOTONIC stamps, ships a
// gpio_event per edge with the documented tags and fields, at the kernel
// stamp moved to REALTIME, and counts the kernel's losses. A trigger on the
// FIFO's line reads the fixture board's sensors (paths.sys) at its first edge
// and skips the second (1 ms later, within min_interval): one gpio_trigger
// record at the edge's time with the values and the read delay.
func TestRunGPIOReplayedLines(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	dir := t.TempDir()
	capture, fifo := filepath.Join(dir, "capture"), filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	rt, _ := timebase.Realtime.Now()
	var b []byte
	for i, s := range []uint32{1, 2, 5} {
		b = gpio.AppendEvent(b, gpio.Event{TimestampNS: rt + int64(i)*1e6, Offset: 17, Seqno: s, LineSeqno: s, Edge: gpio.Edge(1 + i%2)})
	}
	if err := os.WriteFile(capture, b, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, dir, fmt.Sprintf(`paths:
  sys: %s
  dev: %s
clock:
  interval: 200ms
phc:
  enabled: false
sensors:
  enabled: false
gpio:
  enabled: true
  interval: 200ms
  chips:
    - chip: gpiochip0
      replay: %s
      lines:
        - {offset: 17, name: pps_in, edge: both, clock: realtime}
    - chip: gpiochip1
      replay: %s
      lines:
        - {offset: 4, name: drdy, edge: rising}
  triggers:
    - {name: drdy_power, chip: gpiochip1, line: 4, edge: rising, sensors: ["hwmon/ina226/power1", "thermal/*/*"]}
output:
  stdout: true
spool:
  enabled: false
`, sys, dev, capture, fifo))
	cmd := command("run", "--config", cfg, "--duration", "3s")
	cmd.Dir = dir
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0) // waits for the agent's reader
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the clock source has its models by now
	// REALTIME read on both sides of the MONOTONIC stamp: the bracket holds
	// REALTIME at the stamp even when this process is descheduled between the
	// reads (as under qemu-arm).
	rt1, _ := timebase.Realtime.Now()
	mono, _ := timebase.Monotonic.Now()
	rt2, _ := timebase.Realtime.Now()
	b = b[:0]
	for i := 1; i <= 2; i++ {
		b = gpio.AppendEvent(b, gpio.Event{TimestampNS: mono - int64(3-i)*1e6, Offset: 4, Seqno: uint32(i), LineSeqno: uint32(i), Edge: gpio.EdgeRising})
	}
	w.Write(b)
	w.Close()
	err = cmd.Wait()
	stdout, stderr := o.String(), e.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	defer func() {
		if t.Failed() {
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
		}
	}()
	var byLine = map[string][]gpioRecord{}
	for _, r := range gpioEvents(t, stdout) {
		byLine[r.tags["line"]] = append(byLine[r.tags["line"]], r)
		for _, k := range []string{"chip", "line", "name", "edge", "host"} {
			if r.tags[k] == "" {
				t.Errorf("record %v lacks tag %s", r.tags, k)
			}
		}
		for _, k := range []string{"kernel_ns", "clock", "seqno", "line_seqno", "uncertainty_ns"} {
			if r.fields[k] == "" {
				t.Errorf("record %v lacks field %s: %v", r.tags, k, r.fields)
			}
		}
	}
	l17, l4 := byLine["17"], byLine["4"]
	if len(l17) != 3 || len(l4) != 2 {
		t.Fatalf("%d records of line 17, %d of line 4; want 3 and 2", len(l17), len(l4))
	}
	for i, r := range l17 {
		edge := []string{"rising", "falling", "rising"}[i]
		if r.time != rt+int64(i)*1e6 || r.fields["kernel_ns"] != strconv.FormatInt(r.time, 10)+"i" ||
			r.fields["clock"] != `"realtime"` || r.tags["name"] != "pps_in" || r.tags["chip"] != "gpiochip0" || r.tags["edge"] != edge {
			t.Errorf("line 17 record %d: %v %v at %d, want %s at its kernel stamp %d", i, r.tags, r.fields, r.time, edge, rt+int64(i)*1e6)
		}
	}
	// MONOTONIC stamps moved to REALTIME through the clock source's models.
	for i, r := range l4 {
		lo, hi := rt1-int64(2-i)*1e6, rt2-int64(2-i)*1e6 // REALTIME at the stamp lies between
		if r.time < lo-1e6 || r.time > hi+1e6 || r.fields["clock"] != `"monotonic"` || r.tags["name"] != "drdy" {
			t.Errorf("line 4 record %d: %v at %d, want within 1 ms of [%d, %d] (REALTIME around its stamp)", i, r.fields, r.time, lo, hi)
		}
	}
	if !strings.Contains(stdout, "kernel_lost=2i,") || !strings.Contains(stdout, "line17_lost=2i,") {
		t.Errorf("the kernel's two drops on line 17 are not in the self-metrics")
	}
	// Stamped 2 ms before the write, read after it (and long before the
	// run's end).
	if m := regexp.MustCompile(`line4_latency_max_ns=(\d+)i`).FindAllStringSubmatch(stdout, -1); len(m) == 0 {
		t.Errorf("no latency self-metrics for line 4")
	} else if v, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64); v < 2e6 || v > 2e9 {
		t.Errorf("line 4 read latency max %d ns, want [2 ms, 2 s]", v)
	}
	trig := gpioRecords(t, stdout, "gpio_trigger")
	if len(trig) != 1 {
		t.Fatalf("%d gpio_trigger records, want 1 (the second edge within min_interval)", len(trig))
	}
	tr := trig[0]
	if tr.time != l4[0].time || tr.fields["kernel_ns"] != l4[0].fields["kernel_ns"] || tr.tags["trigger"] != "drdy_power" ||
		tr.tags["chip"] != "gpiochip1" || tr.tags["line"] != "4" || tr.tags["edge"] != "rising" || tr.tags["host"] == "" {
		t.Errorf("gpio_trigger %v %v at %d, want drdy_power at line 4's first edge %d", tr.tags, tr.fields, tr.time, l4[0].time)
	}
	if tr.fields["hwmon/ina226/power1"] != "2065000i" || tr.fields["thermal/thermal_zone0/cpu_thermal"] != "47500000i" {
		t.Errorf("gpio_trigger fields %v, want the fixture board's power1 and zone 0", tr.fields)
	}
	// Stamped 2 ms before the write, read at the next collection.
	if d, err := strconv.ParseInt(strings.TrimSuffix(tr.fields["read_delay_ns"], "i"), 10, 64); err != nil || d < 2e6 || d > 2e9 {
		t.Errorf("read_delay_ns %q, want [2 ms, 2 s]", tr.fields["read_delay_ns"])
	}
	for _, want := range []string{"trigger_drdy_power_readings=1i", "trigger_drdy_power_skipped=1i", "trigger_drdy_power_read_errors=1i"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("self-metrics lack %s", want)
		}
	}
	if testing.Verbose() {
		t.Logf("stdout:\n%s", stdout)
	}
}
