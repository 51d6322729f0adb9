package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// HeaderSize is the size of an entry header.
const HeaderSize = 24

// MaxPayload bounds one entry's payload; a larger length field is corruption.
const MaxPayload = 64 << 20

// FlagGzip marks a gzip-compressed payload.
const FlagGzip = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header describes one entry.
type Header struct {
	Length   uint32 // payload bytes
	FirstSeq uint64 // sequence number of the first point
	Points   uint32
	Flags    uint8
}

// LastSeq is the sequence number of the entry's last point.
func (h Header) LastSeq() uint64 { return h.FirstSeq + uint64(h.Points) - 1 }

// Decoding errors. ErrShort means the bytes end inside the entry (a torn write
// when at the end of a file); the others mean the bytes are not an entry.
var (
	ErrShort    = errors.New("entry truncated")
	ErrChecksum = errors.New("entry checksum mismatch")
	ErrCorrupt  = errors.New("entry header corrupt")
)

// AppendEntry frames payload as an entry after dst.
func AppendEntry(dst []byte, h Header, payload []byte) []byte {
	var hdr [HeaderSize]byte
	putHeader(&hdr, h, payload)
	return append(append(dst, hdr[:]...), payload...)
}

// putHeader fills hdr for an entry of payload: h's fields (its Length is
// payload's) and the CRC32C of the header's rest and the payload.
func putHeader(hdr *[HeaderSize]byte, h Header, payload []byte) {
	le := binary.LittleEndian
	le.PutUint32(hdr[0:], uint32(len(payload)))
	le.PutUint64(hdr[8:], h.FirstSeq)
	le.PutUint32(hdr[16:], h.Points)
	hdr[20], hdr[21], hdr[22], hdr[23] = h.Flags, 0, 0, 0
	le.PutUint32(hdr[4:], crc32.Update(crc32.Checksum(hdr[8:], castagnoli), castagnoli, payload))
}

// DecodeEntry reads the entry at the start of b and returns its header, its
// payload (a sub-slice of b) and the entry's total size.
func DecodeEntry(b []byte) (Header, []byte, int, error) {
	h, err := decodeHeader(b)
	if err != nil {
		return h, nil, 0, err
	}
	n := HeaderSize + int(h.Length)
	if len(b) < n {
		return h, nil, 0, ErrShort
	}
	if crc32.Checksum(b[8:n], castagnoli) != binary.LittleEndian.Uint32(b[4:]) {
		return h, nil, 0, ErrChecksum
	}
	return h, b[HeaderSize:n], n, nil
}

// decodeHeader checks the header at the start of b (not the checksum, which
// covers the payload too).
func decodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShort
	}
	le := binary.LittleEndian
	h := Header{Length: le.Uint32(b[0:]), FirstSeq: le.Uint64(b[8:]), Points: le.Uint32(b[16:]), Flags: b[20]}
	if h.Length > MaxPayload || h.Points == 0 || h.FirstSeq == 0 || h.Flags&^FlagGzip != 0 || b[21] != 0 || b[22] != 0 || b[23] != 0 {
		return h, fmt.Errorf("%w: length %d, points %d, first seq %d, flags %#x", ErrCorrupt, h.Length, h.Points, h.FirstSeq, h.Flags)
	}
	if h.FirstSeq+uint64(h.Points)-1 < h.FirstSeq {
		return h, fmt.Errorf("%w: sequence overflows", ErrCorrupt)
	}
	return h, nil
}

// damaged reports whether err says the bytes are not a whole, valid entry (as
// opposed to failing to read them).
func damaged(err error) bool {
	return errors.Is(err, ErrShort) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrChecksum)
}
