package sensors

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/sensors/sensorstest"
	"github.com/monagent/monagent/timebase"
)

// TestFixtureGolden: every sensor the board fixture has, with its reading,
// against testdata/board.golden (go test -run Golden -update rewrites it).
func TestFixtureGolden(t *testing.T) {
	fs := board(t)
	var b strings.Builder
	for _, ss := range allSensors(t, fs) {
		for _, s := range ss {
			v, err := s.Read()
			rel, _ := filepath.Rel(fs.Sys, s.Path)
			if err != nil {
				fmt.Fprintf(&b, "%s %s %s %q %s %s: error %v\n", s.Source, s.Device, s.Name, s.Label, s.Kind, rel, errors.Unwrap(err))
			} else {
				fmt.Fprintf(&b, "%s %s %s %q %s %s: %d %s\n", s.Source, s.Device, s.Name, s.Label, s.Kind, rel, v, s.Kind.Unit())
			}
			s.Close()
		}
	}
	golden := filepath.Join("testdata", "board.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("sensors differ from %s:\n%s", golden, b.String())
	}
}

func TestAbsentTreesAreEmpty(t *testing.T) {
	fs := NewFS(t.TempDir(), t.TempDir())
	for _, find := range []func() ([]*Sensor, error){fs.Hwmon, fs.Thermal, fs.IIO} {
		if ss, err := find(); err != nil || len(ss) != 0 {
			t.Errorf("an empty sysfs: %d sensors, %v", len(ss), err)
		}
	}
}

// TestBadValuesNameTheFile: sysfs contents that are not a number give one
// error naming the attribute; the next good value reads again.
func TestBadValuesNameTheFile(t *testing.T) {
	fs := board(t)
	ss, err := fs.Hwmon()
	if err != nil || len(ss) == 0 {
		t.Fatal(ss, err)
	}
	s := ss[0]
	defer s.Close()
	for _, bad := range []string{"", "abc\n", "12a\n", "99999999999999999999\n", "-\n"} {
		if err := os.WriteFile(s.Path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Read(); err == nil || !strings.Contains(err.Error(), s.Path) || !errors.Is(err, errNotInteger) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	os.WriteFile(s.Path, []byte("4999\n"), 0o644)
	if v, err := s.Read(); err != nil || v != 4_999_000_000 {
		t.Errorf("after bad values: %d, %v", v, err)
	}
	os.Remove(s.Path)
	s.Close()
	if _, err := s.Read(); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a vanished attribute: %v", err)
	}
}

func TestIIOBadScale(t *testing.T) {
	fs := board(t)
	p := filepath.Join(fs.Sys, "bus/iio/devices/iio:device0/in_voltage_scale")
	os.WriteFile(p, []byte("0.43x\n"), 0o644)
	if _, err := fs.IIO(); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("bad scale: %v", err)
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	fs := board(t)
	ss, _ := fs.Hwmon()
	iio, _ := fs.IIO()
	defer CloseAll(ss)
	defer CloseAll(iio)
	for _, s := range []*Sensor{ss[0], iio[0]} {
		s.Read() // opens the file
		if n := testing.AllocsPerRun(100, func() {
			if _, err := s.Read(); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%s: a reading allocates %v times", s.Path, n)
		}
	}
}

// TestBuffer: the ADC's buffer with two channels and the timestamp: the
// scan elements are switched as asked (voltage7 off), the records decoded
// and converted, the clock taken from current_timestamp_clock.
func TestBuffer(t *testing.T) {
	fs := board(t)
	devs, err := fs.IIODevices()
	if err != nil || len(devs) != 2 || devs[0].Node != "iio:device0" {
		t.Fatal(devs, err)
	}
	b, err := fs.OpenBuffer(devs[0], []string{"voltage1", "voltage0"}, 128)
	if err != nil {
		t.Fatal(err)
	}
	scan := filepath.Join(devs[0].Dir, "scan_elements")
	for attr, want := range map[string]string{
		filepath.Join(scan, "in_voltage0_en"): "1", filepath.Join(scan, "in_voltage1_en"): "1",
		filepath.Join(scan, "in_voltage7_en"): "0", filepath.Join(scan, "in_timestamp_en"): "1",
		filepath.Join(devs[0].Dir, "buffer", "length"): "128", filepath.Join(devs[0].Dir, "buffer", "enable"): "1",
	} {
		if got, _ := readString(attr); got != want {
			t.Errorf("%s = %q, want %q", attr, got, want)
		}
	}
	if b.Layout.Size != 16 || b.Clock != timebase.DomainMonotonicRaw {
		t.Fatalf("layout %+v, clock %v", b.Layout, b.Clock)
	}
	vals := make([]int64, 2*3) // room for two records per read
	type rec struct{ v0, v1, ts int64 }
	var got []rec
	for {
		n, err := b.Read(vals, time.Second)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < n; r++ {
			v := vals[r*3 : r*3+3]
			ts, ok := b.Timestamp(v)
			v0, k0 := b.Value(0, v[0])
			v1, _ := b.Value(1, v[1])
			if !ok || k0 != KindVoltage {
				t.Fatalf("timestamp %v, kind %v", ok, k0)
			}
			got = append(got, rec{v0, v1, ts})
		}
	}
	want := []rec{
		{900_000_000, 1_799_560_547, 1_700_000_000_000_000_000},
		{0, 439_453, 1_700_000_000_010_000_000},
		{1_799_560_547, 899_560_547, 1_700_000_000_020_000_000},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("records %v, want %v", got, want)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if v, _ := readString(filepath.Join(devs[0].Dir, "buffer", "enable")); v != "0" {
		t.Errorf("buffer left enabled: %q", v)
	}
}

// TestBufferDrained: a read that gets all it asked for may have left
// records in the device; one that gets less, or nothing, took them all; a
// partial record means more is coming.
func TestBufferDrained(t *testing.T) {
	fs := board(t)
	devs, _ := fs.IIODevices()
	b, err := fs.OpenBuffer(devs[0], []string{"voltage0", "voltage1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	vals := make([]int64, 2*3) // room for two records
	for i, want := range []struct {
		n       int
		eof     bool
		drained bool
	}{{2, false, false}, {1, false, true}, {0, true, true}} {
		n, err := b.Read(vals, time.Second)
		if n != want.n || errors.Is(err, io.EOF) != want.eof || (err != nil && !want.eof) || b.Drained() != want.drained {
			t.Errorf("read %d: %d records, %v, drained %v; want %+v", i, n, err, b.Drained(), want)
		}
	}
	// Half a record more in the file: not drained until it is whole.
	recs, _ := hex.DecodeString(adcRecords)
	f, err := os.OpenFile(filepath.Join(fs.Dev, devs[0].Node), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(recs[:8])
	if n, err := b.Read(vals, time.Second); n != 0 || err != nil || b.Drained() {
		t.Errorf("half a record: %d records, %v, drained %v", n, err, b.Drained())
	}
	f.Write(recs[8:16])
	if n, err := b.Read(vals, time.Second); n != 1 || err != nil || !b.Drained() {
		t.Errorf("its second half: %d records, %v, drained %v", n, err, b.Drained())
	}
}

// TestBufferWithoutTimestamp: a device without a timestamp channel opens,
// its records hold the channels only and have no timestamp.
func TestBufferWithoutTimestamp(t *testing.T) {
	fs := NewFS(sensorstest.BoardWithoutTimestamp(t))
	devs, _ := fs.IIODevices()
	b, err := fs.OpenBuffer(devs[0], []string{"voltage0", "voltage1"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.TimestampIndex() != -1 || b.Layout.Size != 4 || len(b.Layout.Channels) != 2 {
		t.Fatalf("timestamp index %d, layout %+v", b.TimestampIndex(), b.Layout)
	}
	vals := make([]int64, 2*4)
	n, err := b.Read(vals, time.Second)
	if _, ok := b.Timestamp(vals[:2]); n != 3 || err != nil || ok || vals[0] != 2048 || vals[5] != 2047 {
		t.Errorf("%d records %v, %v; timestamp %v", n, vals[:2*n], err, ok)
	}
}

func TestOpenBufferErrors(t *testing.T) {
	fs := board(t)
	devs, _ := fs.IIODevices()
	for _, tc := range []struct {
		dev      IIODevice
		channels []string
		prepare  func()
		want     string
	}{
		{devs[1], []string{"temp"}, nil, "iio:device1 has no buffer"},
		{devs[0], []string{"voltage3"}, nil, "iio:device0 has no scan element voltage3"},
		{devs[0], []string{"voltage0"}, func() {
			os.WriteFile(filepath.Join(devs[0].Dir, "scan_elements", "in_voltage0_type"), []byte("le:u12/12>>8\n"), 0o644)
		}, "in_voltage0_type"},
		{devs[0], []string{"voltage0"}, func() {
			os.WriteFile(filepath.Join(devs[0].Dir, "scan_elements", "in_voltage0_type"), []byte("le:u12/16>>0\n"), 0o644)
			os.WriteFile(filepath.Join(devs[0].Dir, "current_timestamp_clock"), []byte("gps\n"), 0o644)
		}, `unknown timestamp clock "gps"`},
	} {
		if tc.prepare != nil {
			tc.prepare()
		}
		if _, err := fs.OpenBuffer(tc.dev, tc.channels, 0); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.channels, err, tc.want)
		}
	}
}

// openADC opens the fixture ADC's buffer of voltage0 and voltage1.
func openADC(t *testing.T, fs FS) *Buffer {
	t.Helper()
	dev, err := fs.FindIIODevice("TI-am335x-adc.0.auto")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fs.OpenBuffer(dev, []string{"voltage1", "voltage0"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestReadScans: the ADC's three records as scans, two per read here: the
// values converted in channel order, the timestamp apart in Stamp, and a
// read time per scan, its index in ns after the read's middle.
func TestReadScans(t *testing.T) {
	b := openADC(t, board(t))
	if got := fmt.Sprint(b.ValueChannels(), b.Stamped()); got != "[voltage0 voltage1] true" {
		t.Fatalf("value channels, stamped: %s", got)
	}
	scans := make([]Scan, 2)
	var got []string
	for i := 0; ; i++ {
		before, _ := timebase.Realtime.Now()
		n, err := b.ReadScans(scans, time.Second)
		after, _ := timebase.Realtime.Now()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil || i > 2 {
			t.Fatal(n, err)
		}
		for r, sc := range scans[:n] {
			if r > 0 && sc.Read != scans[0].Read+int64(r) || sc.Read > after+int64(r) || sc.Read < before-int64(time.Second) {
				t.Errorf("read %d scan %d at %d, the read from %d to %d", i, r, sc.Read, before, after)
			}
			got = append(got, fmt.Sprint(sc.Stamp, sc.Values[:2]))
		}
	}
	want := []string{
		"1700000000000000000 [900000000 1799560547]",
		"1700000000010000000 [0 439453]",
		"1700000000020000000 [1799560547 899560547]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("scans\n%v\nwant\n%v", got, want)
	}
}

// TestReadScansWithoutTimestamp: a scan of a buffer without a timestamp
// channel has in Stamp its read window's opening, REALTIME: the buffer's
// start until a read drained the buffer, then the start of that read.
func TestReadScansWithoutTimestamp(t *testing.T) {
	fs := NewFS(sensorstest.BoardWithoutTimestamp(t))
	start, _ := timebase.Realtime.Now()
	b := openADC(t, fs)
	if b.Stamped() {
		t.Fatal("stamped without a timestamp channel")
	}
	scans := make([]Scan, 2)
	var opened []int64
	read := func(want int) {
		t.Helper()
		n, err := b.ReadScans(scans, time.Second)
		now, _ := timebase.Realtime.Now()
		if n != want || err != nil {
			t.Fatalf("%d scans, %v; want %d", n, err, want)
		}
		for _, sc := range scans[:n] {
			if sc.Stamp < start || sc.Read < sc.Stamp || sc.Read > now+1 {
				t.Errorf("scan opened at %d, read at %d: want %d <= opened <= read <= %d", sc.Stamp, sc.Read, start, now)
			}
		}
		opened = append(opened, scans[0].Stamp)
	}
	read(2) // not drained: the buffer may hold more
	read(1) // drained: the next records came after this read began
	recs, _ := hex.DecodeString(sensorstest.ADCRecordsUnstamped)
	f, err := os.OpenFile(filepath.Join(fs.Dev, "iio:device0"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(recs[:4])
	f.Close()
	read(1)
	if opened[0] != opened[1] || opened[2] <= opened[1] {
		t.Errorf("windows opened at %v: want the first two at the start, the third later", opened)
	}
	if scans[0].Values[1] != 1799560547 {
		t.Errorf("voltage1 %d", scans[0].Values[1])
	}
}

// A read of the ADC's three records, decoded into scans, allocates nothing.
func TestReadScansDoesNotAllocate(t *testing.T) {
	b := openADC(t, board(t))
	scans := make([]Scan, 64)
	if n := testing.AllocsPerRun(100, func() {
		b.f.Seek(0, io.SeekStart) // the fixture's records again
		if n, err := b.ReadScans(scans, time.Second); n != 3 || err != nil {
			t.Fatal(n, err)
		}
	}); n != 0 {
		t.Errorf("ReadScans allocates %v times", n)
	}
}

func TestFindIIODevice(t *testing.T) {
	fs := board(t)
	for _, name := range []string{"bmp280", "iio:device1"} {
		if d, err := fs.FindIIODevice(name); err != nil || d.Node != "iio:device1" || d.Name != "bmp280" {
			t.Errorf("%s: %+v, %v", name, d, err)
		}
	}
	_, err := fs.FindIIODevice("ads1115")
	var missing *NoDeviceError
	if !errors.As(err, &missing) || err.Error() != fmt.Sprintf(`no IIO device "ads1115" under %s (2 devices)`, fs.Sys) {
		t.Errorf("a device not there: %v", err)
	}
}

// A buffer of more channels than a scan holds is refused.
func TestOpenBufferTooManyChannels(t *testing.T) {
	fs := board(t)
	dev, _ := fs.FindIIODevice("iio:device0")
	scan := filepath.Join(dev.Dir, "scan_elements")
	var chs []string
	for i := range MaxScanChannels + 1 {
		ch := fmt.Sprintf("voltage%d", 10+i)
		chs = append(chs, ch)
		for attr, v := range map[string]string{"en": "0", "index": fmt.Sprint(10 + i), "type": "le:u12/16>>0"} {
			if err := os.WriteFile(filepath.Join(scan, "in_"+ch+"_"+attr), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := fs.OpenBuffer(dev, chs, 0); err == nil || !strings.Contains(err.Error(), "9 channels, a scan holds at most 8") {
		t.Errorf("nine channels: %v", err)
	}
	if b, err := fs.OpenBuffer(dev, chs[:MaxScanChannels], 0); err != nil {
		t.Errorf("eight channels and the timestamp: %v", err)
	} else {
		b.Close()
	}
}

// TestRealSysfs discovers and reads this machine's sensors: whatever the
// kernel has must list and read without a discovery error (a single value
// may fail: a disabled thermal zone refuses reads).
func TestRealSysfs(t *testing.T) {
	n := 0
	for _, ss := range allSensors(t, NewFS("", "")) {
		for _, s := range ss {
			v, err := s.Read()
			t.Logf("%s %s %s: %d %s (%v)", s.Source, s.Device, s.Name, v, s.Kind.Unit(), err)
			n++
		}
		CloseAll(ss)
	}
	if n == 0 {
		t.Skip("this machine has no hwmon, thermal zone or IIO device (sysfs lists none)")
	}
}

// allSensors discovers hwmon, thermal and IIO sensors, failing on an error.
func allSensors(t *testing.T, fs FS) [][]*Sensor {
	t.Helper()
	var out [][]*Sensor
	for _, find := range []func() ([]*Sensor, error){fs.Hwmon, fs.Thermal, fs.IIO} {
		ss, err := find()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ss)
	}
	return out
}
