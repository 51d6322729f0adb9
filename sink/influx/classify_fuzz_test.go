package influx

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
)

// FuzzClassify decodes fuzzed InfluxDB answers (status, content type, body)
// through the real client and classifies them: never a panic, always a state,
// and lines are dead-lettered only for a 400 or 422 whose body InfluxDB wrote.
func FuzzClassify(f *testing.F) {
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
	client := influxdb2.NewClientWithOptions(srv.URL, "user:pass", influxdb2.DefaultOptions().SetHTTPRequestTimeout(2).SetLogLevel(0))
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
		err := api.WriteRecord(ctx, "m v=1i 1\n")
		if err == nil {
			t.Fatalf("status %d answered without an error", st)
		}
		a := classify(err)
		if a.state == "" {
			t.Fatalf("status %d: no state", st)
		}
		if a.reject && st != 400 && st != 422 {
			t.Fatalf("status %d %q: lines rejected for good", st, b)
		}
	})
}
