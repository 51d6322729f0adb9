package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/judge"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const sec = int64(1e9)

func judged(t testing.TB, n int) *judge.Set {
	t.Helper()
	set := &judge.Set{}
	cfg := judge.Config{ThresholdNS: 1000, HoldoverNS: 5 * sec, MinSamples: 1}
	for i := range n {
		j, err := set.Add("system", fmt.Sprintf("ntp:10.0.%d.%d:123", i/250, i%250), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if i%3 != 2 {
			j.Observe(judge.Sample{TimeNS: 100 * sec, Synced: true, OffsetNS: -250, BoundNS: 400 + int64(i%3)*1000})
		}
	}
	return set
}

func serve(t *testing.T, set *judge.Set) (*Server, func() Doc) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Judged{Set: set, Now: func() int64 { return 101 * sec }})
	doc := func() Doc {
		return Doc{Host: "boarda", TimeNS: 101 * sec, Clocks: FromViews(set.Views(101*sec, nil))}
	}
	return listenAndServe(t, reg, doc, Limits{}), doc
}

// listenAndServe serves reg and doc under lim until the test ends.
func listenAndServe(t *testing.T, reg prometheus.Gatherer, doc func() Doc, lim Limits) *Server {
	t.Helper()
	s, err := Listen("127.0.0.1:0", reg, doc, lim)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s
}

func get(t *testing.T, url string, hdr ...string) (string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, b)
	}
	return string(b), resp.Header
}

func TestMetricsAndStatus(t *testing.T) {
	set := judged(t, 3)
	s, _ := serve(t, set)
	base := "http://" + s.Addr()
	m, _ := get(t, base+"/metrics")
	for _, want := range []string{
		`monagent_sync_state{clock="system",source="ntp:10.0.0.0:123",state="LOCKED"} 1`,
		`monagent_sync_state{clock="system",source="ntp:10.0.0.0:123",state="FREERUN"} 0`,
		`monagent_sync_state{clock="system",source="ntp:10.0.0.1:123",state="FREERUN"} 1`,
		`monagent_sync_state{clock="system",source="ntp:10.0.0.2:123",state="UNKNOWN"} 1`,
		`monagent_clock_error_bound_seconds{clock="system",source="ntp:10.0.0.0:123"} 4e-07`,
		`monagent_clock_error_bound_seconds{clock="system",source="ntp:10.0.0.2:123"} +Inf`,
		`monagent_clock_offset_seconds{clock="system",source="ntp:10.0.0.0:123"} -2.5e-07`,
		`monagent_sync_state_changes_total{clock="system",source="ntp:10.0.0.1:123"} 1`,
		`monagent_clock_last_sample_timestamp_seconds{clock="system",source="ntp:10.0.0.0:123"} 100`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(m, `monagent_clock_offset_seconds{clock="system",source="ntp:10.0.0.2:123"}`) {
		t.Error("an offset for a clock with no sample")
	}
	om, h := get(t, base+"/metrics", "Accept", "application/openmetrics-text; version=1.0.0")
	if !strings.HasPrefix(h.Get("Content-Type"), "application/openmetrics-text") || !strings.HasSuffix(om, "# EOF\n") {
		t.Errorf("OpenMetrics: %s", h.Get("Content-Type"))
	}
	raw, _ := get(t, base+"/status")
	var keys struct {
		Clocks []map[string]any `json:"clocks"`
	}
	json.Unmarshal([]byte(raw), &keys)
	for _, k := range []string{"clock", "source", "state", "since_ns", "offset_ns", "error_bound_ns", "last_sample_ns"} {
		if len(keys.Clocks) != 3 || keys.Clocks[0][k] == nil {
			t.Fatalf("/status lacks %s: %s", k, raw)
		}
	}
	d, err := Fetch(context.Background(), base)
	if err != nil || d.Host != "boarda" || len(d.Clocks) != 3 || d.Clocks[0].State != "LOCKED" || d.Clocks[2].ErrorBoundNS != -1 || notLocked(d) != 2 {
		t.Fatalf("fetch: %+v %v", d, err)
	}
	var out bytes.Buffer
	Render(&out, d)
	t.Logf("\n%s", out.String())
	for _, want := range []string{"boarda at 1970-01-01T00:01:41Z", "LOCKED   1 s ago  -250 ns  400 ns   1 s ago      0", "UNKNOWN  -        -        unknown  never        0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("rendered lacks %q", want)
		}
	}
	if probs, err := testutil.CollectAndLint(Judged{Set: set, Now: func() int64 { return 0 }}); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %+v", err, probs)
	}
}

func TestListenAndFetchErrors(t *testing.T) {
	s, _ := serve(t, judged(t, 1))
	if _, err := Listen(s.Addr(), prometheus.NewRegistry(), nil, Limits{}); err == nil || !strings.Contains(err.Error(), "http listen "+s.Addr()+": ") || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("busy: %v", err)
	}
	if _, err := Listen("127.0.0.1:http-no", prometheus.NewRegistry(), nil, Limits{}); err == nil || !strings.HasPrefix(err.Error(), "http listen 127.0.0.1:http-no: ") {
		t.Errorf("malformed: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := Fetch(ctx, "http://"+s.Addr()+"/nothing"); err == nil || !strings.Contains(err.Error(), "want none or /status") {
		t.Errorf("another path: %v", err)
	}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	if _, err := Fetch(ctx, notFound.URL); err == nil || !strings.Contains(err.Error(), "HTTP 404") {
		t.Errorf("404: %v", err)
	}
	if _, err := Fetch(ctx, "http://127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "status http://127.0.0.1:1/status: ") {
		t.Errorf("refused: %v", err)
	}
}

func TestDuration(t *testing.T) {
	for ns, want := range map[int64]string{0: "0 ns", 999: "999 ns", 1500: "1.5 µs", 35_000: "35 µs", 2_500_000_000: "2.5 s", 90e9: "1.5 min", -1200: "-1.2 µs"} {
		if got := Duration(ns); got != want {
			t.Errorf("%d: %q, want %q", ns, got, want)
		}
	}
}

// BenchmarkScrape: a whole /metrics answer (gather and encode) of an agent
// with 112 judged clocks (1,008 series: 4 state gauges and 5 others each)
// and with 1,000 (9,000 series).
func BenchmarkScrape(b *testing.B) {
	for _, clocks := range []int{112, 1000} {
		set := judged(b, clocks)
		reg := prometheus.NewRegistry()
		reg.MustRegister(Judged{Set: set, Now: func() int64 { return 101 * sec }})
		h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		b.Run(fmt.Sprintf("series=%d", clocks*9), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatal(w.Code)
				}
			}
		})
	}
}

func TestStateChangeEvent(t *testing.T) {
	tr := judge.Transition{TimeNS: 5, From: judge.Locked, To: judge.Holdover, Reason: judge.ReasonLost, OffsetNS: -3, BoundNS: 40}
	e := StateChangeEvent("boarda", 7, "system", "ntp:x", tr, 1_795_000_000_000_000_001)
	b, _ := json.Marshal(e)
	want := `{"specversion":"1.0","datacontenttype":"application/json","id":"1795000000000000001-7","source":"monagent://boarda","type":"io.monagent.sync-state.v1","subject":"system/ntp:x","time":"2026-11-18T11:06:40.000000001Z","data":{"clock":"system","source":"ntp:x","from":"LOCKED","to":"HOLDOVER","reason":"reference lost","offset_ns":-3,"bound_ns":40,"time_ns":1795000000000000001}}`
	if string(b) != want {
		t.Fatalf("%s\nwant\n%s", b, want)
	}
}

// Profiles serves Go's profiles only when asked.
func TestProfilesOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		s, err := Listen("127.0.0.1:0", prometheus.NewRegistry(), func() Doc { return Doc{} }, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if on {
			s.Profiles()
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- s.Serve(ctx) }()
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/profile?seconds=1"} {
			resp, err := http.Get("http://" + s.Addr() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := map[bool]int{false: 404, true: 200}[on]; resp.StatusCode != want || (on && len(b) == 0) {
				t.Errorf("profiles %v: GET %s: %d (%d bytes), want %d", on, path, resp.StatusCode, len(b), want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

func TestStatusURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://boarda:9469":         "http://boarda:9469/status",
		"http://boarda:9469/":        "http://boarda:9469/status",
		"http://boarda:9469/status":  "http://boarda:9469/status",
		"http://boarda:9469/status/": "http://boarda:9469/status",
		"https://[::1]:9469":         "https://[::1]:9469/status",
		"http://boarda:9469/metrics": "",
		"http://a b:1":               "",
		"ftp://boarda:9469":          "",
		"http://:9469":               "",
		"http://u:p@boarda:9469":     "",
		"http://boarda:9469/?x=1":    "",
		"boarda:9469":                "",
	} {
		got, err := StatusURL(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("StatusURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func notLocked(d Doc) int { n, _, _ := d.NotLocked(); return n }
