package spool

import (
	"bytes"
	"encoding/hex"
	"io"
	"testing"
)

// FuzzScanSegment reads arbitrary bytes as a segment file through the
// scanner, in chunks of every size, and compares with decoding the bytes
// whole: the same entries, the same stop. Whatever it accepts re-encodes to
// exactly the bytes it read, in a run of sequence numbers without a gap.
func FuzzScanSegment(f *testing.F) {
	golden, _ := hex.DecodeString(goldenEntry) // seq 7-8
	two := AppendEntry(append([]byte(nil), golden...), Header{FirstSeq: 9, Points: 3}, []byte("a\nb\nc\n"))
	f.Add(golden, uint64(7), uint8(0))
	f.Add(two, uint64(1), uint8(5))
	f.Add(two[:len(two)-3], uint64(7), uint8(30))      // torn tail
	f.Add(append(two, golden...), uint64(7), uint8(1)) // a gap backwards
	f.Add(AppendEntry(nil, Header{FirstSeq: 1, Points: 1, Flags: FlagGzip}, []byte{0x1f, 0x8b}), uint64(1), uint8(64))
	f.Fuzz(func(t *testing.T, b []byte, first uint64, chunk uint8) {
		// The reference: the bytes decoded whole.
		var want []Header
		off := 0
		next := uint64(0)
		for off < len(b) {
			h, _, n, err := DecodeEntry(b[off:])
			if err != nil || (next == 0 && h.FirstSeq < first) || (next != 0 && h.FirstSeq != next) {
				break
			}
			want = append(want, h)
			off += n
			next = h.LastSeq() + 1
		}
		sc := scanner{chunk: int(chunk)}
		sc.reset(bytes.NewReader(b), int64(len(b)), first)
		var again []byte
		var got []Header
		for {
			h, payload, err := sc.entry()
			if err == io.EOF {
				if sc.off != int64(len(b)) {
					t.Fatalf("EOF at %d of %d bytes", sc.off, len(b))
				}
				break
			}
			if err != nil {
				if !damaged(err) {
					t.Fatalf("reading bytes from memory: %v", err)
				}
				break
			}
			got = append(got, h)
			again = AppendEntry(again, h, payload)
		}
		if sc.off != int64(off) || len(got) != len(want) {
			t.Fatalf("scanner stopped at %d after %d entries, whole decoding at %d after %d", sc.off, len(got), off, len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("entry %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		if !bytes.Equal(again, b[:sc.off]) {
			t.Fatalf("re-encoded\n%x\nread\n%x", again, b[:sc.off])
		}
	})
}
