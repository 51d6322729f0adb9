package phc

import (
	"bytes"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// FuzzExttsEvents feeds arbitrary reads to the event decoder: it never panics,
// decodes only whole records, and what it decodes encodes back to the same
// bytes (reserved fields aside).
func FuzzExttsEvents(f *testing.F) {
	g := goldenExtts(f)
	f.Add(g)
	f.Add(g[:40])
	f.Add(g[ExttsEventSize : 2*ExttsEventSize])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		dst := make([]ExttsEvent, 4)
		n, err := DecodeExttsEvents(dst, b, timebase.PHC(1))
		whole := min(len(dst), len(b)/ExttsEventSize)
		if n < 0 || n > whole {
			t.Fatalf("decoded %d of %d whole records", n, whole)
		}
		if err == nil && n != whole {
			t.Fatalf("decoded %d of %d without an error", n, whole)
		}
		if err == nil && whole == len(b)/ExttsEventSize && len(b)%ExttsEventSize != 0 {
			t.Fatal("a partial record without an error")
		}
		for i := 0; i < n; i++ {
			e := dst[i]
			if e.Domain != timebase.PHC(1) {
				t.Fatalf("event %d domain %v", i, e.Domain)
			}
			in := b[i*ExttsEventSize : (i+1)*ExttsEventSize]
			out := AppendExttsEvent(nil, e.Channel, e.PHCNS, e.Flags)
			if !bytes.Equal(in[:12], out[:12]) || !bytes.Equal(in[16:24], out[16:24]) {
				t.Fatalf("event %d: %x re-encodes as %x", i, in, out)
			}
		}
	})
}
