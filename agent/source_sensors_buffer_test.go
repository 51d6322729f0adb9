package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors"
	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// runEvents runs an event source's reader until the test ends.
func runEvents[E any](t *testing.T, s *collect.EventSource[E]) {
	t.Helper()
	stop := collecttest.Start(s)
	t.Cleanup(func() { stop(); s.Close() })
}

func waitRing(t *testing.T, s *collect.EventSource[scan], n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); s.Queue().Waiting() < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d samples in the ring, want %d", s.Queue().Waiting(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func scanLine(r record.Record) string {
	var f []string
	for _, x := range r.Fields {
		f = append(f, x.Key+"="+x.Value())
	}
	return fmt.Sprintf("%d %s", r.TimeNS, strings.Join(f, ","))
}

// TestSensorBufferSource: the fixture ADC's three buffered samples (kernel
// timestamps in MONOTONIC_RAW) go through the ring; with the clock source's
// model they ship at their REALTIME, without one at their read time with the
// kernel timestamp kept and counted, each saying which.
func TestSensorBufferSource(t *testing.T) {
	const offset = 5_000_000_000 // REALTIME - MONOTONIC_RAW in the model
	for _, model := range []bool{true, false} {
		t.Run(fmt.Sprintf("model=%v", model), func(t *testing.T) {
			fs := sensors.NewFS(sensorstest.Board(t))
			trs := timebase.NewTranslators()
			if model {
				tr := trs.Get(timebase.DomainMonotonicRaw, timebase.DomainRealtime, 8)
				for i := int64(0); i < 4; i++ {
					raw := 1_700_000_000_000_000_000 + i*1_000_000_000
					tr.Add(timebase.Sample{Local: raw, Ref: raw + offset, DelayNS: 50})
				}
			}
			s, err := newSensorBufferSource(fs, SensorBufferConfig{Device: "TI-am335x-adc.0.auto", Channels: []string{"voltage0", "voltage1"}, Length: 16, Ring: 4}, trs, nil)
			if err != nil {
				t.Fatal(err)
			}
			runEvents(t, s)
			waitRing(t, s, 3)
			b := &collect.Batch{}
			if err := s.Collect(t.Context(), b); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range b.Records {
				if r.Measurement != "sensor_scan" {
					t.Fatalf("measurement %s", r.Measurement)
				}
				got = append(got, scanLine(r))
			}
			var want []string
			for i, v := range [][2]int64{{900_000_000, 1_799_560_547}, {0, 439_453}, {1_799_560_547, 899_560_547}} {
				kns := 1_700_000_000_000_000_000 + int64(i)*10_000_000
				if model {
					want = append(want, fmt.Sprintf("%d voltage0=%d,voltage1=%d,time_source=kernel", kns+offset, v[0], v[1]))
				} else {
					want = append(want, fmt.Sprintf("%d voltage0=%d,voltage1=%d,kernel_ns=%d,time_source=read", b.Records[i].TimeNS, v[0], v[1], kns))
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("records\n%v\nwant\n%v", got, want)
			}
			// Samples of one read shipped at the read time still have keys of
			// their own (InfluxDB would keep only the last of equal keys).
			times := map[int64]bool{}
			for _, r := range b.Records {
				times[r.TimeNS] = true
			}
			if len(times) != len(b.Records) {
				t.Errorf("%d records share %d times", len(b.Records), len(times))
			}
			if f, _ := collecttest.Field(s.SelfFields(), "untranslated"); (f.U == 3) == model {
				t.Errorf("untranslated %d", f.U)
			}
			if err := s.Collect(t.Context(), &collect.Batch{}); !errors.Is(err, collect.ErrNoData) {
				t.Errorf("an empty ring: %v", err)
			}
		})
	}
}

// adcRecord is one record of the fixture ADC's voltage0 and voltage1 and,
// stamped, its timestamp (u16, u16, 4 bytes of padding, s64; else u16, u16).
func adcRecord(v0, v1 uint16, stamped bool, ns int64) []byte {
	b := binary.LittleEndian.AppendUint16(nil, v0)
	b = binary.LittleEndian.AppendUint16(b, v1)
	if stamped {
		b = binary.LittleEndian.AppendUint64(append(b, 0, 0, 0, 0), uint64(ns))
	}
	return b
}

// adcNV is the fixture ADC's raw value in nV, by its in_voltage_scale (mV).
func adcNV(t *testing.T, sys string, raw int) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sys, "bus", "iio", "devices", "iio:device0", "in_voltage_scale"))
	if err != nil {
		t.Fatal(err)
	}
	mV, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(math.Round(float64(raw) * mV * 1e6))
}

// writeADC replaces the fixture ADC's character device with these records.
func writeADC(t *testing.T, dev string, recs ...[]byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dev, "iio:device0"), slices.Concat(recs...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// collectScans runs the source until n samples wait in its ring and
// collects them.
func collectScans(t *testing.T, s *collect.EventSource[scan], n int) []record.Record {
	t.Helper()
	runEvents(t, s)
	waitRing(t, s, n)
	b := &collect.Batch{}
	if err := s.Collect(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	if len(b.Records) != n {
		t.Fatalf("%d records, want %d", len(b.Records), n)
	}
	return b.Records
}

// Samples with one kernel timestamp (a driver stamping a burst alike) never
// ship at one time: a stamp its series already has, the last or an earlier
// one, moves to the first free nanosecond after it, counted in time_bumps,
// the stamp kept in kernel_ns; a sample that collides with nothing keeps its
// time (before, the samples shipped on one key and nothing was counted).
func TestSensorBufferSameStampsAreMovedAndCounted(t *testing.T) {
	const offset = 5_000_000_000 // REALTIME - MONOTONIC_RAW in the model
	const t0 = int64(1_700_000_000_000_000_000)
	sys, dev := sensorstest.Board(t)
	writeADC(t, dev, adcRecord(1, 1, true, t0), adcRecord(2, 2, true, t0), adcRecord(3, 3, true, t0+10_000_000),
		adcRecord(4, 4, true, t0), adcRecord(5, 5, true, t0-500))
	trs := timebase.NewTranslators()
	tr := trs.Get(timebase.DomainMonotonicRaw, timebase.DomainRealtime, 8)
	for i := int64(0); i < 4; i++ {
		tr.Add(timebase.Sample{Local: t0 + i*1e9, Ref: t0 + i*1e9 + offset, DelayNS: 50})
	}
	s, err := newSensorBufferSource(sensors.NewFS(sys, dev), SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage0", "voltage1"}, Length: 16, Ring: 8}, trs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range collectScans(t, s, 5) {
		got = append(got, scanLine(r))
	}
	v := func(raw int) string { return fmt.Sprintf("voltage0=%d,voltage1=%[1]d", adcNV(t, sys, raw)) }
	want := []string{
		fmt.Sprintf("%d %s,time_source=kernel", t0+offset, v(1)),
		fmt.Sprintf("%d %s,kernel_ns=%d,time_source=kernel", t0+offset+1, v(2), t0),
		fmt.Sprintf("%d %s,time_source=kernel", t0+offset+10_000_000, v(3)),
		fmt.Sprintf("%d %s,kernel_ns=%d,time_source=kernel", t0+offset+2, v(4), t0),
		fmt.Sprintf("%d %s,time_source=kernel", t0+offset-500, v(5)),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records\n%v\nwant\n%v", got, want)
	}
	for k, want := range map[string]uint64{"time_bumps": 2, "time_unchecked": 0, "untranslated": 0, "unstamped": 0} {
		if f, _ := collecttest.Field(s.SelfFields(), k); f.U != want {
			t.Errorf("%s %d, want %d", k, f.U, want)
		}
	}
}

// A device without a timestamp channel: its samples ship at the middle of
// their read's window (from before the last read that drained the buffer to
// after theirs), in their order, with time_source=read and uncertainty_ns
// bounding that window, and are counted unstamped (before, they shipped at
// their read time, 1 ns apart, saying and counting nothing).
func TestSensorBufferWithoutTimestampChannel(t *testing.T) {
	sys, dev := sensorstest.BoardWithoutTimestamp(t)
	before, _ := timebase.Realtime.Now()
	s, err := newSensorBufferSource(sensors.NewFS(sys, dev),
		SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage0", "voltage1"}, Length: 16, Ring: 4}, timebase.NewTranslators(), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := collectScans(t, s, 3)
	after, _ := timebase.Realtime.Now()
	var t0, u0 int64
	for i, r := range recs {
		u, _ := r.Field("uncertainty_ns")
		src, _ := r.Field("time_source")
		if src.S != "read" || u.I <= 0 {
			t.Fatalf("record %d: %s", i, scanLine(r))
		}
		// One read took the three: one window, opened before the source
		// started the buffer and closed when the read returned.
		if lo, hi := r.TimeNS-u.I, r.TimeNS+u.I; lo < before || hi > after+2*int64(i)+1 {
			t.Errorf("record %d at %d ± %d: [%d, %d], want within [%d, %d]", i, r.TimeNS, u.I, lo, hi, before, after)
		}
		if i == 0 {
			t0, u0 = r.TimeNS, u.I
		} else if r.TimeNS != t0+int64(i) || u.I != u0+int64(i) {
			t.Errorf("record %d at %d ± %d after %d ± %d: want its index in ns later", i, r.TimeNS, u.I, t0, u0)
		}
		if _, ok := r.Field("kernel_ns"); ok {
			t.Errorf("record %d has kernel_ns without a timestamp channel", i)
		}
	}
	if v1, _ := recs[2].Field("voltage1"); v1.I != adcNV(t, sys, 2047) {
		t.Errorf("the third sample's voltage1 %d, want raw 2047", v1.I)
	}
	for k, want := range map[string]uint64{"unstamped": 3, "untranslated": 0, "time_bumps": 0} {
		if f, _ := collecttest.Field(s.SelfFields(), k); f.U != want {
			t.Errorf("%s %d, want %d", k, f.U, want)
		}
	}
}

// Eight channels and the timestamp: every channel ships (before, the ninth
// value overran the scan and the reader panicked).
func TestSensorBufferEightChannelsAndTimestamp(t *testing.T) {
	sys, dev := sensorstest.Board(t)
	scanDir := filepath.Join(sys, "bus", "iio", "devices", "iio:device0", "scan_elements")
	var chs []string
	rec := []byte{}
	for i := range 8 {
		ch := fmt.Sprintf("voltage%d", i)
		chs = append(chs, ch)
		for attr, v := range map[string]string{"en": "0", "index": fmt.Sprint(i), "type": "le:u12/16>>0"} {
			if err := os.WriteFile(filepath.Join(scanDir, "in_"+ch+"_"+attr), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rec = binary.LittleEndian.AppendUint16(rec, uint16(100*(i+1)))
	}
	const t0 = int64(1_700_000_000_000_000_000)
	rec = binary.LittleEndian.AppendUint64(rec, uint64(t0)) // 16 bytes of channels, then the s64
	writeADC(t, dev, rec)
	s, err := newSensorBufferSource(sensors.NewFS(sys, dev), SensorBufferConfig{Device: "iio:device0", Channels: chs, Length: 16, Ring: 4}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := collectScans(t, s, 1)[0]
	for i, ch := range chs {
		want := adcNV(t, sys, 100*(i+1))
		if f, ok := r.Field(ch); !ok || f.I != want {
			t.Errorf("%s %d (%v), want %d", ch, f.I, ok, want)
		}
	}
	if k, _ := r.Field("kernel_ns"); k.I != t0 {
		t.Errorf("kernel_ns %d, want the stamp %d (untranslated)", k.I, t0)
	}
}

func TestSensorBufferErrors(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	for _, tc := range []struct {
		cfg  SensorBufferConfig
		want string
	}{
		{SensorBufferConfig{Device: "ads1115", Channels: []string{"voltage0"}, Length: 1, Ring: 4}, `no IIO device "ads1115"`},
		{SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage5"}, Length: 1, Ring: 4}, "no scan element voltage5"},
		{SensorBufferConfig{Device: "bmp280", Channels: []string{"temp"}, Length: 1, Ring: 4}, "has no buffer"},
	} {
		if _, err := newSensorBufferSource(fs, tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// TestSensorBufferRingOverflowIsCounted: a ring of two for three samples:
// two ship, one is counted in ring_dropped.
func TestSensorBufferRingOverflowIsCounted(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	s, err := newSensorBufferSource(fs, SensorBufferConfig{Device: "iio:device0", Channels: []string{"voltage0"}, Length: 16, Ring: 2}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	runEvents(t, s)
	for deadline := time.Now().Add(5 * time.Second); s.Queue().RingDropped() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	b := &collect.Batch{}
	s.Collect(t.Context(), b)
	var self []string
	for _, f := range s.SelfFields() {
		self = append(self, f.Key+"="+f.Value())
	}
	if len(b.Records) != 2 || !strings.Contains(strings.Join(self, " "), "ring_dropped=1 ") {
		t.Fatalf("%d records, self %v", len(b.Records), self)
	}
}

// TestSensorBufferDrainsAtStop: at the stop, the samples still in the
// kernel's buffer are read and queued (here all of the fixture's three:
// the stop came before any read), not left neither shipped nor counted.
func TestSensorBufferDrainsAtStop(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	dev, err := fs.FindIIODevice("TI-am335x-adc.0.auto")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.OpenBuffer(dev, []string{"voltage0", "voltage1"}, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := &sensorBuffer{buf: b}
	s, err := collect.NewEventSource(collect.EventSourceConfig[scan]{Name: "drain", Interval: time.Second, Ring: 4,
		Producer: collect.ProducerFunc[scan](d.produce), Emit: d.emit})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	stop()
	if err := d.produce(ctx, s.Queue()); err != nil {
		t.Fatal(err)
	}
	if got := s.Queue().Waiting(); got != 3 {
		t.Errorf("%d samples queued at the stop, want the buffer's 3", got)
	}
}

// Emitting a scan's record does not allocate: its fields come from a slab
// (one allocation per slabRecords scans), its tags are shared.
func TestSensorBufferEmitDoesNotAllocate(t *testing.T) {
	fs := sensors.NewFS(sensorstest.Board(t))
	s, err := newSensorBufferSource(fs, SensorBufferConfig{Device: "TI-am335x-adc.0.auto", Channels: []string{"voltage0", "voltage1"}, Length: 16, Ring: 256}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	scans := make([]scan, 64)
	for i := range scans {
		scans[i] = scan{Stamp: 1_700_000_000_000_000_000 + int64(i)*1000, Read: 1_700_000_000_000_000_000 + int64(i), Values: [8]int64{int64(i), -int64(i)}}
	}
	b := &collect.Batch{Host: "bbb", Records: make([]record.Record, 0, len(scans))}
	collectOnce := func() {
		s.Queue().Put(scans)
		b.Records = b.Records[:0]
		if err := s.Collect(t.Context(), b); err != nil || len(b.Records) != len(scans) {
			t.Fatalf("Collect: %d records, %v", len(b.Records), err)
		}
	}
	if a := testing.AllocsPerRun(100, collectOnce); a != 0 {
		t.Errorf("%.1f allocations per %d scans, want 0", a, len(scans))
	}
	if r := b.Records[0]; r.Tag("host") != "bbb" || r.Tag("device") == "" || len(r.Fields) < 3 {
		t.Errorf("record %v", r)
	}
}
