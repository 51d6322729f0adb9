package sensors

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/monagent/monagent/timebase"
)

// Buffer reads an IIO device's buffer through its character device: records
// of the enabled scan elements, many per read, with the kernel's timestamp of
// each when the timestamp channel is enabled. Not safe for concurrent use.
type Buffer struct {
	Device IIODevice
	Layout Layout
	// Clock is the domain of the timestamp channel: the device's
	// current_timestamp_clock (realtime when the attribute is absent).
	Clock timebase.Domain
	// Kinds, scales and offsets per channel of Layout (timestamp: none).
	kinds   []Kind
	scale   []float64
	offset  []float64
	tsIndex int      // the timestamp channel's index in Layout.Channels, -1 none
	names   []string // the channels of a Scan's Values

	f       *os.File
	length  int // the kernel buffer's length in records (0: unknown)
	buf     []byte
	pend    int  // bytes of a partial record at the start of buf
	drained bool // the last Read took every record there was

	vals []int64 // ReadScans' decoded records
	// opened is ReadScans': REALTIME before the read after which every
	// record not yet read reached the buffer (the latest read that drained
	// it, else the buffer's start).
	opened int64
}

// MaxScanChannels bounds the channels of a buffer, its timestamp aside
// (the AM335x ADC has 8 inputs).
const MaxScanChannels = 8

// Scan is one record of a buffer decoded: its channels' values and its
// times.
type Scan struct {
	// Stamp is the kernel's timestamp of the record (the buffer's Clock; 0
	// when the driver gave none). From a buffer without a timestamp channel
	// it is instead REALTIME when the record's read window opened: the
	// record reached the buffer after it.
	Stamp int64
	// Read is the record's time from its read (REALTIME): the middle of the
	// read's window plus the record's index in the read.
	Read   int64
	Values [MaxScanChannels]int64 // per channel of ValueChannels, in its kind's unit
}

// timestampClocks maps current_timestamp_clock to domains (the coarse
// clocks are their clocks, read at tick resolution).
var timestampClocks = map[string]timebase.Domain{
	"realtime": timebase.DomainRealtime, "realtime_coarse": timebase.DomainRealtime,
	"monotonic": timebase.DomainMonotonic, "monotonic_coarse": timebase.DomainMonotonic,
	"monotonic_raw": timebase.DomainMonotonicRaw, "boottime": timebase.DomainBoottime, "tai": timebase.DomainTAI,
}

// OpenBuffer enables the named channels (and the timestamp channel when
// the device has one) and nothing else, sets the buffer's length in records,
// opens the character device and starts the buffer. Close stops it.
func (fs FS) OpenBuffer(dev IIODevice, channels []string, length int) (*Buffer, error) {
	scan := filepath.Join(dev.Dir, "scan_elements")
	ents, err := os.ReadDir(scan)
	if err != nil {
		return nil, fmt.Errorf("sensors: %s has no buffer: %w", dev.Node, err)
	}
	want := map[string]bool{"timestamp": true}
	for _, c := range channels {
		want[c] = true
	}
	// The buffer must be off while its scan elements change.
	enable := filepath.Join(dev.Dir, "buffer", "enable")
	if err := writeAttr(enable, "0"); err != nil {
		return nil, err
	}
	var chs []ScanChannel
	found := map[string]bool{}
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), "_en")
		if !ok {
			continue
		}
		ch := strings.TrimPrefix(name, "in_")
		on := want[ch]
		v := "0"
		if on {
			v = "1"
		}
		if err := writeAttr(filepath.Join(scan, e.Name()), v); err != nil {
			return nil, err
		}
		if !on {
			continue
		}
		found[ch] = true
		c := ScanChannel{Name: ch}
		p := filepath.Join(scan, name+"_index")
		s, err := readString(p)
		if err == nil {
			c.Index, err = strconv.Atoi(s)
		}
		if err != nil {
			return nil, fmt.Errorf("sensors: %s: %v", p, err)
		}
		p = filepath.Join(scan, name+"_type")
		if s, err = readString(p); err == nil {
			c.Type, err = ParseScanType(s)
		}
		if err != nil {
			return nil, fmt.Errorf("sensors: %s: %w", p, err)
		}
		chs = append(chs, c)
	}
	for _, c := range channels {
		if !found[c] {
			return nil, fmt.Errorf("sensors: %s has no scan element %s", dev.Node, c)
		}
	}
	l, err := NewLayout(chs)
	if err != nil {
		return nil, fmt.Errorf("sensors: %s: %w", dev.Node, err)
	}
	values := len(l.Channels)
	if found["timestamp"] {
		values--
	}
	if values > MaxScanChannels {
		return nil, fmt.Errorf("sensors: %s: %d channels, a scan holds at most %d", dev.Node, values, MaxScanChannels)
	}
	b := &Buffer{Device: dev, Layout: l, Clock: timebase.DomainRealtime, tsIndex: -1}
	if s, err := readString(filepath.Join(dev.Dir, "current_timestamp_clock")); err == nil {
		d, ok := timestampClocks[s]
		if !ok {
			return nil, fmt.Errorf("sensors: %s: unknown timestamp clock %q", dev.Node, s)
		}
		b.Clock = d
	}
	for i, c := range l.Channels {
		var k Kind
		scale, off := 1.0, 0.0
		if c.Name == "timestamp" {
			b.tsIndex = i
		} else {
			b.names = append(b.names, c.Name)
		}
		if t, ok := iioTypes[iioType(c.Name)]; ok && i != b.tsIndex {
			k = t.kind
			if scale, err = iioAttr(dev.Dir, c.Name, iioType(c.Name), "scale", 1); err != nil {
				return nil, err
			}
			if off, err = iioAttr(dev.Dir, c.Name, iioType(c.Name), "offset", 0); err != nil {
				return nil, err
			}
			scale *= t.mult
		}
		b.kinds, b.scale, b.offset = append(b.kinds, k), append(b.scale, scale), append(b.offset, off)
	}
	if length > 0 {
		if err := writeAttr(filepath.Join(dev.Dir, "buffer", "length"), strconv.Itoa(length)); err != nil {
			return nil, err
		}
	}
	// The length the kernel took (it may round it), or the device's own.
	b.length = length
	if v, err := os.ReadFile(filepath.Join(dev.Dir, "buffer", "length")); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(v))); err == nil && n > 0 {
			b.length = n
		}
	}
	node := filepath.Join(fs.Dev, dev.Node)
	if b.f, err = os.Open(node); err != nil {
		return nil, fmt.Errorf("sensors: %w", err)
	}
	b.opened = timebase.RealtimeNS() // no record reached the buffer before it started
	if err := writeAttr(enable, "1"); err != nil {
		b.f.Close()
		return nil, err
	}
	b.buf = make([]byte, 64*l.Size)
	b.vals = make([]int64, 64*len(l.Channels))
	return b, nil
}

func writeAttr(path, v string) error {
	if err := os.WriteFile(path, []byte(v), 0); err != nil {
		return fmt.Errorf("sensors: write %s to %s: %w", v, path, err)
	}
	return nil
}

// Timestamp returns the record's kernel timestamp (Clock's domain) from its
// decoded values, and false when the timestamp channel is off.
func (b *Buffer) Timestamp(vals []int64) (int64, bool) {
	if b.tsIndex < 0 {
		return 0, false
	}
	return vals[b.tsIndex], true
}

// TimestampIndex is the timestamp channel's index in Layout.Channels, -1
// when it is off.
func (b *Buffer) TimestampIndex() int { return b.tsIndex }

// Value converts channel i's raw value to its kind's unit ((raw + offset) *
// scale); the kind is 0 for channels of other types and the timestamp.
func (b *Buffer) Value(i int, raw int64) (int64, Kind) {
	if b.kinds[i] == 0 {
		return raw, 0
	}
	return roundInt((float64(raw) + b.offset[i]) * b.scale[i]), b.kinds[i]
}

// Read waits up to timeout for records and decodes as many whole ones as
// fit into vals, len(Layout.Channels) values each, returning how many. A
// partial record (never sent by the kernel, but by a pipe or file) is kept
// for the next call.
func (b *Buffer) Read(vals []int64, timeout time.Duration) (int, error) {
	b.drained = false
	per := len(b.Layout.Channels)
	max := min(len(vals)/per, len(b.buf)/b.Layout.Size)
	if max == 0 {
		return 0, fmt.Errorf("sensors: room for %d values, a record has %d", len(vals), per)
	}
	_ = b.f.SetReadDeadline(time.Now().Add(timeout)) // regular files (tests) have no deadlines
	want := max*b.Layout.Size - b.pend
	n, err := b.f.Read(b.buf[b.pend : max*b.Layout.Size])
	if n == 0 && err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			b.drained = true
			return 0, nil
		}
		if errors.Is(err, io.EOF) {
			b.drained = true
			return 0, io.EOF
		}
		return 0, fmt.Errorf("sensors: read %s: %w", b.Device.Node, err)
	}
	// The kernel hands out what it has, up to what was asked: less means
	// it had no more (a partial record means more is coming).
	have := b.pend + n
	b.drained = n < want && have%b.Layout.Size == 0
	recs := have / b.Layout.Size
	for r := 0; r < recs; r++ {
		if err := b.Layout.Decode(b.buf[r*b.Layout.Size:(r+1)*b.Layout.Size], vals[r*per:(r+1)*per]); err != nil {
			return r, err
		}
	}
	b.pend = copy(b.buf, b.buf[recs*b.Layout.Size:have])
	return recs, nil
}

// Drained says whether the last Read took every record the device had (it
// got less than it asked for, or nothing): the records of the next Read all
// reached the buffer after the last one began. For a device without a
// timestamp channel, which stamps nothing, the reads are what bounds when
// a record reached the buffer (its conversion came before that, by the
// driver's latency).
func (b *Buffer) Drained() bool { return b.drained }

// Length is how many records the kernel's buffer holds (buffer/length; 0
// when unknown).
func (b *Buffer) Length() int { return b.length }

// Stamped says whether the buffer has a timestamp channel.
func (b *Buffer) Stamped() bool { return b.tsIndex >= 0 }

// ValueChannels names the channels of a Scan's Values, in their order.
func (b *Buffer) ValueChannels() []string { return b.names }

// ReadScans is Read into scans: it waits up to timeout for records and
// decodes as many whole ones as fit (up to 64), each with its channels'
// values in their kinds' units and its kernel timestamp, and returns how
// many. Its io.EOF is Read's.
//
// Each record also gets a time from its read, for when it has no usable
// kernel stamp: it reached the buffer after the last read that drained the
// buffer began (or the buffer started) and before this read returned, so
// the middle of that window is within half of it of the record; the
// record's index in the read in ns keeps a read's records in their order.
func (b *Buffer) ReadScans(scans []Scan, timeout time.Duration) (int, error) {
	per := len(b.Layout.Channels)
	before := timebase.RealtimeNS()
	n, err := b.Read(b.vals[:min(len(scans)*per, len(b.vals))], timeout)
	now := timebase.RealtimeNS()
	opened := b.opened
	if b.drained {
		b.opened = before
	}
	if err != nil {
		return 0, err
	}
	mid := opened + (now-opened+1)/2 // no nearer to opened than to now
	for r := range n {
		b.decodeScan(b.vals[r*per:(r+1)*per], &scans[r])
		scans[r].Read = mid + int64(r)
		if b.tsIndex < 0 {
			scans[r].Stamp = opened
		}
	}
	return n, nil
}

// decodeScan fills sc's values and stamp from a record's raw values.
func (b *Buffer) decodeScan(raw []int64, sc *Scan) {
	sc.Stamp = 0
	j := 0
	for i, v := range raw {
		if i == b.tsIndex {
			sc.Stamp = v
			continue
		}
		sc.Values[j], _ = b.Value(i, v)
		j++
	}
}

// Stop disables the buffer: the device pushes no more scans, and those it
// holds stay to be read (Read until it finds none). Close disables it too.
func (b *Buffer) Stop() error {
	return writeAttr(filepath.Join(b.Device.Dir, "buffer", "enable"), "0")
}

// Close stops the buffer and closes the device.
func (b *Buffer) Close() error {
	return errors.Join(b.Stop(), b.f.Close())
}
