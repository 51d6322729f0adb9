package influx

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink/spool"
)

// refused is a line a replaying server refuses: its number in the request
// (1-based) and text.
type refused struct {
	n    int
	text string
}

// flavor is how one InfluxDB answers a request holding refused lines,
// replayed from its sources (see goldenAnswers).
type flavor struct {
	name    string
	status  int
	atomic  bool // a refused line stops the whole request: nothing is written
	body    func(bad []refused) string
	reason  string                // what the dead-letter file says of each refused line
	cause   func(st Stats) uint64 // the Rejected counter the lines go to
	bound   func(n, k int) int    // requests a batch of n lines with k refused ones may take
	written func(n, k int) int    // times a good line may be written (1: never re-sent)
}

func bisectionBound(n, k int) int { return 1 + 2*k*ceilLog2(n) }

var flavors = []flavor{
	{
		name: "3.x write_lp partial write", status: 400,
		body: func(bad []refused) string {
			type line struct {
				OriginalLine string `json:"original_line"`
				LineNumber   int    `json:"line_number"`
				ErrorMessage string `json:"error_message"`
			}
			var data []line
			for _, b := range bad {
				data = append(data, line{b.text, b.n, "invalid column type for column 'bad', expected iox::column_type::field::integer, got iox::column_type::field::string"})
			}
			out, _ := json.Marshal(map[string]any{"error": "partial write of line protocol occurred", "data": data})
			return string(out)
		},
		reason:  "invalid column type for column 'bad'",
		cause:   func(st Stats) uint64 { return st.RejectedSchema },
		bound:   func(n, k int) int { return 1 },
		written: func(n, k int) int { return 1 },
	},
	{
		name: "3.0-3.4 /api/v2/write", status: 400, atomic: true,
		body: func(bad []refused) string {
			return fmt.Sprintf(`{"error":"parsing failed for write_lp endpoint","data":{"original_line":%q,"line_number":%d,"error_message":"Field type mismatch on table m column bad. Existing column is i64 but attempted to add string"}}`, bad[0].text, bad[0].n)
		},
		reason:  "Field type mismatch on table m column bad",
		cause:   func(st Stats) uint64 { return st.RejectedSchema },
		bound:   func(n, k int) int { return k + 1 },
		written: func(n, k int) int { return 1 },
	},
	{
		name: "3.5+ /api/v2/write", status: 400, atomic: true,
		body: func(bad []refused) string {
			return `{"code":"invalid","message":"write buffer error: line protocol parse failed: Field type mismatch on table m column bad. Existing column is i64 but attempted to add string"}`
		},
		reason:  "line protocol parse failed: Field type mismatch",
		cause:   func(st Stats) uint64 { return st.RejectedSchema },
		bound:   bisectionBound,
		written: func(n, k int) int { return 1 },
	},
	{
		name: "InfluxDB 3 Cloud", status: 400, atomic: true,
		body: func(bad []refused) string {
			msg := "failed to parse line protocol: errors encountered on line(s):"
			for _, b := range bad {
				msg += fmt.Sprintf("\nerror parsing line %d (1-based): Unable to parse field value 'x'", b.n)
			}
			out, _ := json.Marshal(map[string]any{"code": "invalid", "line": bad[0].n, "message": msg})
			return string(out)
		},
		reason:  "Unable to parse field value",
		cause:   func(st Stats) uint64 { return st.RejectedSyntax },
		bound:   func(n, k int) int { return 2 },
		written: func(n, k int) int { return 1 },
	},
	{
		name: "2.x parse errors", status: 400, atomic: true,
		body: func(bad []refused) string {
			var recs []string
			for _, b := range bad {
				recs = append(recs, fmt.Sprintf("unable to parse '%s': invalid field format", b.text))
			}
			out, _ := json.Marshal(map[string]string{"code": "invalid", "message": strings.Join(recs, "\n")})
			return string(out)
		},
		reason:  "invalid field format",
		cause:   func(st Stats) uint64 { return st.RejectedSyntax },
		bound:   func(n, k int) int { return 2 },
		written: func(n, k int) int { return 1 },
	},
	{
		name: "2.x field type conflict", status: 422,
		body: func(bad []refused) string {
			return fmt.Sprintf(`{"code":"unprocessable entity","message":"failure writing points to database: partial write: field type conflict: input field \"bad\" on measurement \"m\" is type string, already exists as type integer dropped=%d"}`, len(bad))
		},
		reason:  "field type conflict",
		cause:   func(st Stats) uint64 { return st.RejectedSchema },
		bound:   bisectionBound,
		written: func(n, k int) int { return 1 + ceilLog2(n) }, // written again at each level of the bisection
	},
}

// replayServer answers /api/v2/write as a flavor does: lines with a field
// "bad" are refused, the others written (counted per line) unless the flavor
// is atomic.
type replayServer struct {
	f        flavor
	mu       sync.Mutex
	requests int
	written  map[string]int
}

func (rs *replayServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rd io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rd = zr
	}
	body, _ := io.ReadAll(rd)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.requests++
	var bad []refused
	var good []string
	for i, l := range strings.Split(strings.TrimRight(string(body), "\n"), "\n") {
		if strings.Contains(l, " bad=") {
			bad = append(bad, refused{i + 1, l})
		} else {
			good = append(good, l)
		}
	}
	if len(bad) == 0 || !rs.f.atomic {
		for _, l := range good {
			rs.written[l]++
		}
	}
	if len(bad) == 0 {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rs.f.status)
	io.WriteString(w, rs.f.body(bad))
}

// TestRefusalsOfEachInfluxDB (issue 20 item 4): a batch holding refused lines
// is delivered against each InfluxDB's answer: the refused lines are
// dead-lettered once, with the server's reason, the others all arrive, lines
// the server wrote are not sent again, and the batch takes the requests the
// answer allows (one for InfluxDB 3's partial write, whose body the client
// library does not read: it was retried forever).
func TestRefusalsOfEachInfluxDB(t *testing.T) {
	const n = 200
	badAt := []int{17, 100, 163}
	for _, f := range flavors {
		for _, gz := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/gzip=%v", f.name, gz), func(t *testing.T) {
				rs := &replayServer{f: f, written: map[string]int{}}
				srv := httptest.NewServer(rs)
				defer srv.Close()
				recs := recsN(n)
				for _, i := range badAt {
					recs[i] = point(i, "bad")
				}
				sp, err := spool.Open(spool.Options{Dir: t.TempDir(), FlushInterval: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				if err := sp.Append(recs); err != nil {
					t.Fatal(err)
				}
				sh, err := New(Config{URL: srv.URL, Bucket: "b", Token: "t", Gzip: gz, BatchInterval: 20 * time.Millisecond,
					MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, HoldBackoff: 10 * time.Millisecond}, sp)
				if err != nil {
					t.Fatal(err)
				}
				runUntil(t, sh, func() bool { st := sp.Stats(); return st.Acknowledged+st.DeadLettered == n })
				checkRefusals(t, sh, sp, recs, badAt, f.reason)
				st := sh.Stats()
				if f.cause(st) != uint64(len(badAt)) {
					t.Errorf("the refused lines are counted under another reason: %+v", st)
				}
				rs.mu.Lock()
				defer rs.mu.Unlock()
				if max := f.bound(n, len(badAt)); rs.requests > max {
					t.Errorf("%d requests, the answers allow %d", rs.requests, max)
				}
				for i, r := range recs {
					l := lineOf(t, r)
					if c := rs.written[l]; !strings.Contains(l, " bad=") && (c < 1 || c > f.written(n, len(badAt))) {
						t.Fatalf("line %d written %d times (at most %d): %s", i, c, f.written(n, len(badAt)), l)
					}
				}
			})
		}
	}
}

// checkRefusals checks that the lines at badAt, and only they, are in the
// dead-letter file once each with reason, and counted.
func checkRefusals(t *testing.T, sh *Shipper, sp *spool.Spool, recs []record.Record, badAt []int, reason string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(sp.Dir(), "deadletter.lp"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for _, i := range badAt {
		l := lineOf(t, recs[i])
		at := strings.Index(text, "\n"+l+"\n")
		if strings.Count(text, l+"\n") != 1 || at < 0 {
			t.Fatalf("line %d (%s) is not in the dead-letter file once:\n%s", i, l, text)
		}
		comment := text[strings.LastIndex(text[:at], "# "):at]
		if !strings.Contains(comment, reason) {
			t.Fatalf("line %d is dead-lettered with %q, want the server's reason %q", i, comment, reason)
		}
	}
	if c := strings.Count(text, "# "); c != len(badAt) {
		t.Fatalf("%d lines dead-lettered, want %d:\n%s", c, len(badAt), text)
	}
	if st := sh.Stats(); st.DeadLettered != uint64(len(badAt)) || sp.Stats().DeadLettered != uint64(len(badAt)) {
		t.Fatalf("shipper %+v, spool %+v", st, sp.Stats())
	}
}

// lineOf is r's line protocol without its newline.
func lineOf(t *testing.T, r record.Record) string {
	t.Helper()
	var enc record.Encoder
	b, rejected, err := enc.Append(nil, []record.Record{r})
	if err != nil || rejected != 0 {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}
