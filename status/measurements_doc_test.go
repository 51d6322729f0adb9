package status

import (
	"os"
	"strings"
	"testing"
)

// docs/schema.md lists every measurement of the table on /metrics with its
// labels, states and info labels.
func TestMeasurementsDocumented(t *testing.T) {
	raw, err := os.ReadFile("../docs/schema.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i := strings.Index(doc, "### The measurements on /metrics")
	if i < 0 {
		t.Fatal(`docs/schema.md has no section "The measurements on /metrics"`)
	}
	rows := map[string]string{}
	for _, l := range strings.Split(doc[i:], "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		cells := strings.Split(l, "|")
		for _, m := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(m), "`")] = l
		}
	}
	for _, m := range Measurements {
		row, ok := rows[m.Name]
		if !ok {
			t.Errorf("%s is not in docs/schema.md's table of the measurements on /metrics", m.Name)
			continue
		}
		for _, l := range [][]string{m.Labels, m.States, m.Info} {
			for _, k := range l {
				if !strings.Contains(row, "`"+labelOf(k)+"`") {
					t.Errorf("docs/schema.md: the row of %s does not name %s", m.Name, labelOf(k))
				}
			}
		}
	}
}
