package report

import (
	"io"
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
	f.Add(lines(1_795_567_471_826_515_523, 1_795_567_471_826_515_530, 1_795_567_471_826_515_501))
	f.Add(lines(-1_795_567_471_826_515_523, 0, 9_223_372_036_854_775_807))
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
			r, err := Compute(s, Options{})
			if err != nil {
				continue
			}
			if r.N != int64(len(s.X)) {
				t.Fatalf("n %d for %d samples", r.N, len(s.X))
			}
			if err := WriteJSON(io.Discard, []*Result{r}); err != nil {
				t.Fatalf("json: %v", err)
			}
		}
	})
}

// FuzzNSJSON decodes arbitrary JSON as a statistic (NS.UnmarshalJSON):
// errors are fine, panics are not, and what it decodes writes back to a
// number that decodes to the same integer and writes the same again.
func FuzzNSJSON(f *testing.F) {
	for _, s := range []string{"1795567471826515523", "-1795567471826515523", "1795567471826515523.417", "6.666666666666667",
		"9223372036854775808", "-9223372036854775808", "1e-7", "2500", "null", `"1"`, "[]", "-", "00000000000000000001.5"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v NS
		if v.UnmarshalJSON(b) != nil {
			return
		}
		m1, err := v.MarshalJSON()
		if err != nil {
			return // NaN or infinite: not a JSON number
		}
		var w NS
		if err := w.UnmarshalJSON(m1); err != nil {
			t.Fatalf("%q decodes to %+v, writes %s, which does not decode: %v", b, v, m1, err)
		}
		m2, err := w.MarshalJSON()
		if err != nil || string(m1) != string(m2) {
			t.Fatalf("%q: %s then %s (%v)", b, m1, m2, err)
		}
		if v.Base != 0 && v.Int().Cmp(w.Int()) != 0 {
			t.Fatalf("%q: %v then %v", b, v.Int(), w.Int())
		}
	})
}
