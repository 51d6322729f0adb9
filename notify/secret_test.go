package notify

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// attempts counts what Observe is told per receiver.
type attempts struct {
	mu   sync.Mutex
	n    map[int]int
	errs []string
}

func (a *attempts) observe(i int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.n == nil {
		a.n = map[int]int{}
	}
	a.n[i]++
	if err != nil {
		a.errs = append(a.errs, err.Error())
	}
}

func (a *attempts) of(i int) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.n[i]
}

func observed(t *testing.T, a *attempts, rs ...Receiver) *Sender {
	t.Helper()
	s, err := New(Options{Receivers: rs, Queue: 4, Timeout: 300 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Attempts: 4, Observe: a.observe})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(t.Context())
	return s
}

// Issue 33 item 2: a webhook that answers a redirect has not taken the
// event. A 307 to another server delivers nothing there (before: the whole
// CloudEvent was posted to the other host and counted delivered); a
// receiver redirecting to itself costs one request per attempt (before: 10
// per attempt, 80 per event).
func TestRedirectIsAFailedDelivery(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var hits atomic.Int64
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, other.URL+"/moved?token=ELSEWHERE", http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	var selfHits atomic.Int64
	self := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		selfHits.Add(1)
		http.Redirect(w, r, r.URL.String(), http.StatusFound)
	}))
	defer self.Close()
	var a attempts
	s := observed(t, &a, Receiver{URL: redirecting.URL + "/hook"}, Receiver{URL: self.URL + "/hook"})
	s.Send(event(1))
	waitFor(t, "both receivers to give up the event", func() bool {
		st := s.Stats()
		return st[0].Dropped+st[0].Delivered == 1 && st[1].Dropped+st[1].Delivered == 1
	})
	s.Close(0)
	st := s.Stats()
	otherHost := strings.TrimPrefix(other.URL, "http://")
	if st[0].Delivered != 0 || st[0].Dropped != 1 || elsewhere.Load() != 0 || !strings.Contains(st[0].LastError, "HTTP 307") ||
		!strings.Contains(st[0].LastError, "to "+otherHost) {
		t.Errorf("a 307 to another server: %+v; that server got %d requests", st[0], elsewhere.Load())
	}
	if hits.Load() != int64(a.of(0)) {
		t.Errorf("a 307 to another server: %d requests in %d attempts", hits.Load(), a.of(0))
	}
	if st[1].Delivered != 0 || st[1].Dropped != 1 || !strings.Contains(st[1].LastError, "HTTP 302") || selfHits.Load() != int64(a.of(1)) {
		t.Errorf("a receiver redirecting to itself: %+v, %d requests in %d attempts", st[1], selfHits.Load(), a.of(1))
	}
	if strings.Contains(st[0].LastError, "ELSEWHERE") {
		t.Errorf("the redirect's query is in the error: %s", st[0].LastError)
	}
}

// Issue 33 item 2: a receiver is named by its index and host alone; its
// URL's path and query (where Slack-style webhooks and token URLs keep
// their secret) are nowhere in its stats or errors, whatever fails: an
// error status, a refused connection, a timeout, a request that cannot be
// made. Its header (a token) is sent.
func TestReceiverNamesCarryNoSecret(t *testing.T) {
	const secretPath, secretQuery = "/services/T0PATHSECRET/B0PATHSECRET", "token=TOPSECRET&sig=TOPSECRET2"
	var auth atomic.Pointer[string]
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		auth.Store(&a)
		http.Error(w, "no: "+r.URL.String(), http.StatusBadGateway)
	}))
	defer failing.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := ln.Addr().String()
	ln.Close() // nothing listens there now
	hang := make(chan struct{})
	hanging := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer hanging.Close()
	defer close(hang)
	rs := []Receiver{
		{URL: failing.URL + secretPath + "?" + secretQuery, Header: http.Header{"Authorization": {"Bearer TOPSECRET-HEADER"}}},
		{URL: "http://" + refusing + secretPath + "?" + secretQuery},
		{URL: hanging.URL + secretPath + "?" + secretQuery},
		{URL: "http://[fe80::1%25nosuchif0]:1" + secretPath + "?" + secretQuery},
	}
	var a attempts
	s := observed(t, &a, rs...)
	s.Send(event(1))
	waitFor(t, "every receiver to give up the event", func() bool {
		for _, st := range s.Stats() {
			if st.Dropped != 1 {
				return false
			}
		}
		return true
	})
	s.Close(0)
	if got := auth.Load(); got == nil || *got != "Bearer TOPSECRET-HEADER" {
		t.Errorf("the receiver's header was not sent: %v", got)
	}
	a.mu.Lock()
	errs := a.errs
	a.mu.Unlock()
	for i, st := range s.Stats() {
		u, _ := url.Parse(rs[i].URL)
		if st.Receiver != i || st.Host != u.Host || st.LastError == "" || !strings.HasPrefix(st.LastError, Name(i, u.Host)+": ") {
			t.Errorf("receiver %d: %+v", i, st)
		}
		errs = append(errs, st.LastError)
	}
	if len(errs) < 2*len(rs) {
		t.Errorf("%d errors observed for %d receivers", len(errs), len(rs))
	}
	for _, e := range errs {
		t.Log(e)
		if strings.Contains(e, "SECRET") || strings.Contains(e, "/services") || strings.Contains(e, "token") {
			t.Errorf("an error names more than the receiver's host: %s", e)
		}
	}
}

func TestCheckURLAndHost(t *testing.T) {
	for _, c := range []struct{ url, host, err string }{
		{"https://hooks.example/services/T0/B0/XYZ", "hooks.example:443", ""},
		{"http://hooks.example?token=x", "hooks.example:80", ""},
		{"http://[::1]:8080/h", "[::1]:8080", ""},
		{"http://alice:S3cretPass@hooks.example/h", "", "the URL for hooks.example:80 holds credentials (user:password@)"},
		{"http://alice@hooks.example/h", "", "the URL for hooks.example:80 holds credentials (user:password@)"},
		{"ftp://hooks.example/S3cretPass", "", `not an http:// or https:// URL (scheme "ftp")`},
		{"http:///S3cretPass", "", "not an http:// or https:// URL (no host)"},
		{"http://hooks.example/%zzS3cretPass", "", `not an http:// or https:// URL: invalid URL escape "%zz"`},
	} {
		err := CheckURL(c.url)
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("CheckURL(%s) = %v, want %q", c.url, err, c.err)
		}
		if c.host != "" {
			u, _ := url.Parse(c.url)
			if h := Host(u); h != c.host {
				t.Errorf("Host(%s) = %s, want %s", c.url, h, c.host)
			}
		}
	}
}
