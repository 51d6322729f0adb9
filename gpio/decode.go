package gpio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
)

// Offsets in struct gpio_v2_line_event.
const (
	evTimestamp = 0  // __aligned_u64 timestamp_ns
	evID        = 8  // __u32 id (the edge)
	evOffset    = 12 // __u32 offset
	evSeqno     = 16 // __u32 seqno
	evLineSeqno = 20 // __u32 line_seqno
	// 24: __u32 padding[6]
)

// DecodeEvents decodes the whole gpio_v2_line_event records at the start of
// buf into dst, at most len(dst), and returns how many it decoded. Every
// event gets clock, the clock of the request that produced it. It does not
// allocate on success. Records beyond len(dst) are left undecoded. A buf whose length is not a multiple of EventSize
// yields the whole records before the tail and an error wrapping
// ErrPartialEvent; a record with an unknown edge id stops the decoding there
// with an error wrapping ErrBadEvent.
func DecodeEvents(dst []Event, buf []byte, clock EventClock) (int, error) {
	n := min(len(dst), len(buf)/EventSize)
	for i := 0; i < n; i++ {
		b := buf[i*EventSize : (i+1)*EventSize]
		id := binary.NativeEndian.Uint32(b[evID:])
		if id != uint32(EdgeRising) && id != uint32(EdgeFalling) {
			return i, fmt.Errorf("event %d of %d: unknown edge id %d: %w", i, n, id, ErrBadEvent)
		}
		dst[i] = Event{
			TimestampNS: int64(binary.NativeEndian.Uint64(b[evTimestamp:])),
			Offset:      binary.NativeEndian.Uint32(b[evOffset:]),
			Seqno:       binary.NativeEndian.Uint32(b[evSeqno:]),
			LineSeqno:   binary.NativeEndian.Uint32(b[evLineSeqno:]),
			Edge:        Edge(id),
			Clock:       clock,
		}
	}
	if n < len(dst) && len(buf)%EventSize != 0 {
		return n, fmt.Errorf("%d bytes after %d events, not a whole %d-byte event: %w",
			len(buf)%EventSize, n, EventSize, ErrPartialEvent)
	}
	return n, nil
}

// AppendEvent appends the kernel's encoding of e (native byte order) to b:
// the inverse of DecodeEvents, for fixtures and tests.
func AppendEvent(b []byte, e Event) []byte {
	var r [EventSize]byte
	binary.NativeEndian.PutUint64(r[evTimestamp:], uint64(e.TimestampNS))
	binary.NativeEndian.PutUint32(r[evID:], uint32(e.Edge))
	binary.NativeEndian.PutUint32(r[evOffset:], e.Offset)
	binary.NativeEndian.PutUint32(r[evSeqno:], e.Seqno)
	binary.NativeEndian.PutUint32(r[evLineSeqno:], e.LineSeqno)
	return append(b, r[:]...)
}

// Offsets in struct gpio_v2_line_info and gpio_v2_line_info_changed.
const (
	liName     = 0   // char name[32]
	liConsumer = 32  // char consumer[32]
	liOffset   = 64  // __u32 offset
	liNumAttrs = 68  // __u32 num_attrs
	liFlags    = 72  // __aligned_u64 flags
	liAttrs    = 80  // struct gpio_v2_line_attribute attrs[10]
	attrSize   = 16  // __u32 id, __u32 padding, 64-bit union
	icTime     = 256 // __aligned_u64 timestamp_ns
	icType     = 264 // __u32 event_type
)

// Attribute ids (GPIO_V2_LINE_ATTR_ID_*).
const (
	attrFlags        = 1
	attrOutputValues = 2
	attrDebounce     = 3
)

// decodeLineInfo decodes a struct gpio_v2_line_info (LineInfoSize bytes).
func decodeLineInfo(b []byte) (LineInfo, error) {
	if len(b) < LineInfoSize {
		return LineInfo{}, fmt.Errorf("line info: %d bytes, want %d: %w", len(b), LineInfoSize, ErrPartialEvent)
	}
	li := LineInfo{
		Offset:   int(binary.NativeEndian.Uint32(b[liOffset:])),
		Name:     cString(b[liName : liName+maxNameSize]),
		Consumer: cString(b[liConsumer : liConsumer+maxNameSize]),
		Flags:    LineFlags(binary.NativeEndian.Uint64(b[liFlags:])),
	}
	na := binary.NativeEndian.Uint32(b[liNumAttrs:])
	if na > maxAttrs {
		return li, fmt.Errorf("line %d: %d attributes, at most %d: %w", li.Offset, na, maxAttrs, ErrBadEvent)
	}
	for i := 0; i < int(na); i++ {
		a := b[liAttrs+i*attrSize : liAttrs+(i+1)*attrSize]
		switch binary.NativeEndian.Uint32(a) {
		case attrDebounce:
			// The union's __u32 debounce_period_us sits at its first byte
			// whatever the byte order.
			li.Debounce = time.Duration(binary.NativeEndian.Uint32(a[8:])) * time.Microsecond
		case attrFlags, attrOutputValues:
		default:
			return li, fmt.Errorf("line %d: attribute %d: unknown id %d: %w", li.Offset, i, binary.NativeEndian.Uint32(a), ErrBadEvent)
		}
	}
	return li, nil
}

// DecodeInfoChanged decodes one struct gpio_v2_line_info_changed, as read
// from a chip descriptor that watches lines (InfoChangedSize bytes).
func DecodeInfoChanged(b []byte) (InfoChange, error) {
	if len(b) != InfoChangedSize {
		return InfoChange{}, fmt.Errorf("line info change: %d bytes, want %d: %w", len(b), InfoChangedSize, ErrPartialEvent)
	}
	li, err := decodeLineInfo(b[:LineInfoSize])
	if err != nil {
		return InfoChange{}, fmt.Errorf("line info change: %w", err)
	}
	c := InfoChange{
		Info:        li,
		TimestampNS: int64(binary.NativeEndian.Uint64(b[icTime:])),
		Kind:        ChangeKind(binary.NativeEndian.Uint32(b[icType:])),
	}
	if k := binary.NativeEndian.Uint32(b[icType:]); k < uint32(ChangeRequested) || k > uint32(ChangeConfig) {
		return InfoChange{}, fmt.Errorf("line info change: line %d: unknown change type %d: %w", li.Offset, k, ErrBadEvent)
	}
	return c, nil
}

// cString is the bytes of a NUL-terminated fixed-size field.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
