package influx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	ihttp "github.com/influxdata/influxdb-client-go/v2/api/http"
)

// FuzzClassify decodes fuzzed InfluxDB answers (status, content type, body)
// through the real client and the shipper's transport, which must keep the
// body as sent, and classifies them (checkAnswer).
func FuzzClassify(f *testing.F) {
	for _, g := range goldenAnswers {
		f.Add(g.status, "application/json", g.body)
	}
	for _, seed := range []struct {
		status int
		ctype  string
		body   string
	}{
		{400, "application/json", `{"error":"partial write: field type conflict: input field \"v\" on measurement \"m\" is type string, already exists as type integer dropped=1"}`},
		{400, "application/json", `{"code":"invalid","message":"unable to parse 'm v=': missing field value"}`},
		{404, "application/json", `{"error":"database not found: \"x\""}`},
		{401, "application/json", `{"error":"authorization failed"}`},
		{413, "text/html", `<html>Request Entity Too Large</html>`},
		{400, "application/json", `{"error":"partial wri`},
		{400, "text/html", `<html>400 Bad Request</html>`},
		{503, "", ``},
		{429, "application/json", `{}`},
	} {
		f.Add(seed.status, seed.ctype, seed.body)
	}
	var mu sync.Mutex // the answer, set by the fuzz function, read by the server
	var status int
	var ctype, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		status, ctype, body := status, ctype, body
		mu.Unlock()
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	defer srv.Close()
	client := influxdb2.NewClientWithOptions(srv.URL, "user:pass", influxdb2.DefaultOptions().
		SetHTTPClient(httpClient(Config{Timeout: 2 * time.Second, BatchBytes: 1 << 20})).SetLogLevel(0))
	defer client.Close()
	api := client.WriteAPIBlocking("", "db/rp")
	f.Fuzz(func(t *testing.T, st int, ct, b string) {
		if st < 400 || st > 599 {
			return // net/http refuses other codes in WriteHeader, or they are successes
		}
		mu.Lock()
		status, ctype, body = st, ct, b
		mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var c capture
		err := api.WriteRecord(context.WithValue(ctx, captureKey{}, &c), "m v=1i 1\n")
		if err == nil {
			t.Fatalf("status %d answered without an error", st)
		}
		var he *ihttp.Error
		if !errors.As(err, &he) || he.StatusCode != st {
			return // net/http refused the answer (an invalid header): no answer
		}
		if c.status != st || string(c.body) != b {
			t.Fatalf("status %d %q: the transport kept %d %q", st, b, c.status, c.body)
		}
		checkAnswer(t, st, b, classify(err, &c))
	})
}

// checkAnswer holds for every answer: a state, and lines refused for good
// (reject, unexplained) only for a 400 or 422, too large only for a 413.
func checkAnswer(t *testing.T, status int, body string, a answer) {
	t.Helper()
	if a.state == "" || a.msg == "" {
		t.Fatalf("status %d %q: no state or message: %+v", status, body, a)
	}
	if (a.action == reject || a.action == unexplained) && status != 400 && status != 422 {
		t.Fatalf("status %d %q: lines refused for good: %+v", status, body, a)
	}
	if (a.action == tooLarge) != (status == 413) {
		t.Fatalf("status %d %q: %v", status, body, a.action)
	}
	if len(a.lines) > 0 && a.action != reject {
		t.Fatalf("status %d %q: lines named but %v", status, body, a.action)
	}
	for _, l := range a.lines {
		if l.n < 0 || (l.n == 0 && l.line == "" && l.record == "") {
			t.Fatalf("status %d %q: a named line that names nothing: %+v", status, body, l)
		}
	}
}

// FuzzParseAnswer decodes fuzzed answers (status, body, and the client
// library's reading of them) seeded with real servers' answers: never a
// panic, always a state, lines dead-lettered only for a 400 or 422, and the
// lines it names are found in a request or not at all.
func FuzzParseAnswer(f *testing.F) {
	for _, g := range goldenAnswers {
		f.Add(g.status, g.body, "")
	}
	f.Add(400, "", "partial write: unable to parse 'm v= 6': missing field value unable to parse 'm,t=x 7': invalid field format dropped=0")
	f.Add(400, "", "<html>")
	f.Fuzz(func(t *testing.T, status int, body, alt string) {
		if status < 300 || status > 599 {
			return
		}
		a := parseAnswer(status, []byte(body), alt)
		checkAnswer(t, status, body, a)
		ls := splitLines([]byte("m v=1i 1\nm v= 6\nm,t=x 7\ncpu,host=a val= 123\n"), 4)
		refused, _ := matchNamed(ls, a.lines)
		for i := range refused {
			if i < 0 || i >= len(ls) {
				t.Fatalf("line %d of %d refused", i, len(ls))
			}
		}
	})
}
