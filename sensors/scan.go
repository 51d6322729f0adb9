package sensors

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// ScanType is a buffered channel's element format, scan_elements/<ch>_type:
// "le:s12/16>>4" is little endian, signed, 12 significant bits in 16 bits of
// storage, shifted right by 4; "be:u16/16X2>>0" repeats the element twice.
type ScanType struct {
	BigEndian bool
	Signed    bool
	Bits      int // significant bits
	Storage   int // bits of storage: 8, 16, 32 or 64
	Shift     int
	Repeat    int // 1 unless the type says X<n>
}

// ErrScanType is the error of a malformed scan element type.
var ErrScanType = errors.New("malformed scan element type")

// ParseScanType parses a scan element type string.
func ParseScanType(s string) (ScanType, error) {
	bad := func(why string) (ScanType, error) {
		return ScanType{}, fmt.Errorf("%q: %s: %w", s, why, ErrScanType)
	}
	var t ScanType
	end, rest, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return bad("no endianness")
	}
	switch end {
	case "le":
	case "be":
		t.BigEndian = true
	default:
		return bad("endianness " + end)
	}
	if rest == "" {
		return bad("no sign")
	}
	switch rest[0] {
	case 's':
		t.Signed = true
	case 'u':
	default:
		return bad("sign " + rest[:1])
	}
	bits, rest, ok := strings.Cut(rest[1:], "/")
	if !ok {
		return bad("no storage bits")
	}
	storage, shift, ok := strings.Cut(rest, ">>")
	if !ok {
		return bad("no shift")
	}
	t.Repeat = 1
	if st, rep, ok := strings.Cut(storage, "X"); ok {
		storage = st
		n, err := strconv.Atoi(rep)
		if err != nil || n < 1 || n > 64 {
			return bad("repeat " + rep)
		}
		t.Repeat = n
	}
	var err error
	if t.Bits, err = strconv.Atoi(bits); err != nil {
		return bad("bits " + bits)
	}
	if t.Storage, err = strconv.Atoi(storage); err != nil {
		return bad("storage " + storage)
	}
	if t.Shift, err = strconv.Atoi(shift); err != nil {
		return bad("shift " + shift)
	}
	switch t.Storage {
	case 8, 16, 32, 64:
	default:
		return bad("storage of " + storage + " bits")
	}
	if t.Bits < 1 || t.Shift < 0 || t.Bits+t.Shift > t.Storage {
		return bad("bits and shift do not fit the storage")
	}
	return t, nil
}

// bytes is one element's storage, repeats included.
func (t ScanType) bytes() int { return t.Storage / 8 * t.Repeat }

// value extracts the element at b (the first repeat).
func (t ScanType) value(b []byte) int64 {
	n := t.Storage / 8
	_ = b[n-1] // one bounds check
	var u uint64
	if t.BigEndian {
		for i := 0; i < n; i++ {
			u = u<<8 | uint64(b[i])
		}
	} else {
		for i := n - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
	}
	u >>= uint(t.Shift)
	if t.Bits < 64 {
		u &= 1<<uint(t.Bits) - 1
		if t.Signed && u&(1<<uint(t.Bits-1)) != 0 {
			u |= ^uint64(0) << uint(t.Bits) // sign extension
		}
	}
	return int64(u)
}

// ScanChannel is one enabled channel of a buffer.
type ScanChannel struct {
	Name   string // voltage0, timestamp
	Index  int    // scan_elements/<ch>_index: the order in a record
	Type   ScanType
	Offset int // byte offset in a record (set by NewLayout)
}

// Layout is the record format of a buffer: the enabled channels in index
// order, each aligned to its own size, the record aligned to the largest (the
// kernel's iio_compute_scan_bytes).
type Layout struct {
	Channels []ScanChannel
	Size     int // bytes per record
}

// NewLayout orders the channels by index and computes their offsets.
func NewLayout(chs []ScanChannel) (Layout, error) {
	if len(chs) == 0 {
		return Layout{}, errors.New("sensors: no channel enabled")
	}
	l := Layout{Channels: append([]ScanChannel(nil), chs...)}
	sort.Slice(l.Channels, func(i, j int) bool { return l.Channels[i].Index < l.Channels[j].Index })
	largest := 0
	for i := range l.Channels {
		c := &l.Channels[i]
		if i > 0 && c.Index == l.Channels[i-1].Index {
			return Layout{}, fmt.Errorf("sensors: channels %s and %s share scan index %d", l.Channels[i-1].Name, c.Name, c.Index)
		}
		n := c.Type.bytes()
		l.Size = align(l.Size, n)
		c.Offset = l.Size
		l.Size += n
		largest = max(largest, n)
	}
	l.Size = align(l.Size, largest)
	return l, nil
}

// align is the kernel's ALIGN(x, a) (for the power-of-two sizes of storage).
func align(x, a int) int { return (x + a - 1) &^ (a - 1) }

// Decode reads one record into out (one value per channel, in Channels'
// order). It returns an error when rec is not one record or out is short.
func (l *Layout) Decode(rec []byte, out []int64) error {
	if len(rec) != l.Size {
		return fmt.Errorf("sensors: record of %d bytes, layout has %d", len(rec), l.Size)
	}
	if len(out) < len(l.Channels) {
		return fmt.Errorf("sensors: %d values for %d channels", len(out), len(l.Channels))
	}
	for i := range l.Channels {
		c := &l.Channels[i]
		out[i] = c.Type.value(rec[c.Offset:])
	}
	return nil
}
