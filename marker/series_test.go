package marker

import (
	"fmt"
	"testing"

	"github.com/monagent/monagent/timebase"
)

// TestSeriesTable: one value per name and tag set, kept for the series'
// next markers; series beyond max are refused and their markers counted.
func TestSeriesTable(t *testing.T) {
	tab := NewSeriesTable[int](2)
	var got []string
	for _, line := range []string{"a", "b k=1", "a k=1", "a", "b k=1", "c", "a rt=5 value=2"} {
		m, err := Parse([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		v := tab.Get(&m)
		if v == nil {
			got = append(got, line+":dropped")
			continue
		}
		*v++
		got = append(got, fmt.Sprintf("%s:%d", line, *v))
	}
	want := "[a:1 b k=1:1 a k=1:dropped a:2 b k=1:2 c:dropped a rt=5 value=2:3]"
	if fmt.Sprint(got) != want || tab.Len() != 2 || tab.Dropped() != 2 {
		t.Errorf("%v, %d series, %d dropped; want %s, 2, 2", got, tab.Len(), tab.Dropped(), want)
	}
}

// A marker's value and stamp are not its series.
func TestSeriesOfAMarker(t *testing.T) {
	a, _ := Parse([]byte("step rank=0 phase=x"))
	b, _ := Parse([]byte("step rank=0 phase=x value=3 mono=7"))
	c, _ := Parse([]byte("step rank=1 phase=x"))
	if a.Series() != b.Series() || a.Series() == c.Series() || a.Series().Name != "step" {
		t.Errorf("series %+v %+v %+v", a.Series(), b.Series(), c.Series())
	}
}

func TestWhen(t *testing.T) {
	for line, want := range map[string]timebase.Timestamp{
		"m":         {NS: 99, Domain: timebase.DomainRealtime},
		"m rt=123":  {NS: 123, Domain: timebase.DomainRealtime},
		"m mono=45": {NS: 45, Domain: timebase.DomainMonotonic},
	} {
		m, err := Parse([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.When(99); got != want {
			t.Errorf("%q: %+v, want %+v", line, got, want)
		}
	}
}
