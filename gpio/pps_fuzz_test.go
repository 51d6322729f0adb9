package gpio

import (
	"encoding/hex"
	"errors"
	"testing"
)

// FuzzDecodePPSKInfo: any bytes decode without a panic; a record that
// decodes re-encodes to the same bytes (but the padding and pps_ktime flags,
// which the decoder ignores), and every failure wraps ErrBadEvent.
func FuzzDecodePPSKInfo(f *testing.F) {
	golden, _ := hex.DecodeString(goldenPPSKInfo)
	f.Add(golden)
	f.Add(AppendPPSKInfo(nil, PPSEvent{}))
	f.Add(golden[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodePPSKInfo(b)
		if err != nil {
			if !errors.Is(err, ErrBadEvent) {
				t.Fatalf("error %v does not wrap ErrBadEvent", err)
			}
			return
		}
		if e.AssertNS < 0 || e.ClearNS < 0 {
			t.Fatalf("negative stamp from %x: %+v", b, e)
		}
		again, err := DecodePPSKInfo(AppendPPSKInfo(nil, e))
		if err != nil || again != e {
			t.Fatalf("round trip of %+v: %+v, %v", e, again, err)
		}
	})
}
