package report

import (
	"strings"
	"testing"
)

// FuzzReport feeds arbitrary line protocol through reading, grouping and
// computing: errors are fine, panics are not.
func FuzzReport(f *testing.F) {
	f.Add(lines(3, 14, -7, 20, 9, 1))
	f.Add(lines(-42))
	f.Add("clock_offset,clock=a offset_ns=NaN 1\nclock_offset,clock=a offset_ns=1.5 1\nclock_offset,clock=b offset_ns=9223372036854775807i 2\n")
	f.Add("clock_offset offset_ns=1i 3\nclock_offset offset_ns=2i 1\nclock_offset offset_ns=3i 1\nclock_offset offset_ns=-9223372036854775808i 2\n")
	f.Fuzz(func(t *testing.T, lp string) {
		c, _ := NewCollector(Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}})
		if c.ReadLineProtocol(strings.NewReader(lp)) != nil {
			return
		}
		ss, err := c.Finish()
		if err != nil {
			return
		}
		for _, s := range ss {
			if r, err := Compute(s, Options{}); err == nil && r.N != int64(len(s.X)) {
				t.Fatalf("n %d for %d samples", r.N, len(s.X))
			}
		}
	})
}
