package spool

import (
	"bytes"
	"encoding/hex"
	"testing"
)

// FuzzDecodeEntry feeds arbitrary bytes to the segment decoder. It must never
// panic, and whatever it accepts must re-encode to exactly the bytes it read.
func FuzzDecodeEntry(f *testing.F) {
	golden, _ := hex.DecodeString(goldenEntry)
	f.Add(golden)
	f.Add(AppendEntry(nil, Header{FirstSeq: 1, Points: 1, Flags: FlagGzip}, []byte{0x1f, 0x8b}))
	f.Add(golden[:10])
	f.Add(append(golden, golden...))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, payload, n, err := DecodeEntry(b)
		if err != nil {
			return
		}
		if n > len(b) || n != HeaderSize+len(payload) {
			t.Fatalf("size %d of %d bytes, payload %d", n, len(b), len(payload))
		}
		if again := AppendEntry(nil, h, payload); !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoded\n%x\nread\n%x", again, b[:n])
		}
	})
}
