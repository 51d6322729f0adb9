package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/monagent/monagent/sink/spool"
)

// ExportSpool writes the selected records of every segment as line
// protocol, skipping and counting what is not line protocol; what it writes
// gives the report the spool gives.
func TestExportSpool(t *testing.T) {
	dir := t.TempDir()
	tai := strings.ReplaceAll(lines(5, 5), "clock=realtime", "clock=tai")
	sp, err := spool.Open(spool.Options{Dir: dir, SegmentBytes: 64})
	if err != nil {
		t.Fatal(err)
	}
	lp := lines(3, 14, -7, 20, 9, 1) + "other,host=a\\ b s=\"x\\\"y\",u=5u,f=1.5 4\nbad line\nnotime v=1i\n" + tai
	for _, l := range strings.SplitAfter(lp, "\n") {
		sp.AppendLines([]byte(l))
		if err := sp.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	export := func(f ExportFilter) (string, ExportStats) {
		t.Helper()
		var b bytes.Buffer
		st, err := ExportSpool(dir, f, &b)
		if err != nil {
			t.Fatal(err)
		}
		return b.String(), st
	}
	all, st := export(ExportFilter{})
	if want := strings.Replace(lp, "bad line\n", "", 1); all != want || st.Written != 10 || st.Malformed != 1 || st.Segments < 2 {
		t.Fatalf("export %+v:\n%s\nwant\n%s", st, all, want)
	}
	if !strings.Contains(st.FirstMalformed, "the entry of points 8..8: at line 1:9") {
		t.Errorf("first malformed: %q", st.FirstMalformed)
	}
	// The report of the export is the report of the spool.
	q := Query{Measurement: "clock_offset", Field: "offset_ns", GroupBy: []string{"clock"}}
	fromSpool, _ := NewCollector(q)
	if err := fromSpool.ReadSpool(dir); err != nil {
		t.Fatal(err)
	}
	fromExport, _ := NewCollector(q)
	if err := fromExport.ReadLineProtocol(strings.NewReader(all)); err != nil {
		t.Fatal(err)
	}
	a, _ := fromSpool.Finish()
	b, _ := fromExport.Finish()
	if len(a) != 2 || len(a) != len(b) || a[0].Name() != b[0].Name() || !slices.Equal(a[0].X, b[0].X) || !slices.Equal(a[1].T, b[1].T) {
		t.Errorf("report of the spool %v, of the export %v", a, b)
	}
	// Filters: the measurement, and inclusive bounds that leave out records
	// without a time.
	const t0 = 1_700_000_000_000_000_000 // lines' first time, then one a second
	got, st := export(ExportFilter{Measurement: "clock_offset", Start: t0 + 1e9, Stop: t0 + 3e9})
	want := ""
	for _, l := range strings.SplitAfter(lines(3, 14, -7, 20, 9, 1)+tai, "\n") {
		if strings.HasSuffix(l, "1000000000\n") || strings.HasSuffix(l, "2000000000\n") || strings.HasSuffix(l, "3000000000\n") {
			want += l
		}
	}
	if got != want || st.Written != int64(strings.Count(want, "\n")) {
		t.Errorf("clock_offset in [2, 4]:\n%s\nwant\n%s", got, want)
	}
	if got, _ := export(ExportFilter{Measurement: "notime"}); got != "notime v=1i\n" {
		t.Errorf("unbounded export of a record without a time: %q", got)
	}
	if got, _ := export(ExportFilter{Measurement: "notime", Stop: 10}); got != "" {
		t.Errorf("a bounded export keeps a record without a time: %q", got)
	}
	if _, err := ExportSpool(t.TempDir()+"/none", ExportFilter{}, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "no spool at") {
		t.Errorf("missing spool: %v", err)
	}
}
