package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func event(i int) Event {
	data, _ := json.Marshal(map[string]any{"clock": "system", "n": i})
	return Event{ID: ID(int64(i), uint64(i)), Source: "monagent://boarda", Type: "io.monagent.sync-state.v1", Subject: "system",
		Time: time.Unix(0, 1_795_000_000_123_456_789).UTC(), Data: data}
}

func sender(t *testing.T, urls ...string) *Sender {
	t.Helper()
	var rs []Receiver
	for _, u := range urls {
		rs = append(rs, Receiver{URL: u})
	}
	s, err := New(Options{Receivers: rs, Queue: 4, Timeout: 200 * time.Millisecond, MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Attempts: 4})
	if err != nil {
		t.Fatal(err)
	}
	s.Run(context.Background())
	return s
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestDeliversStructuredCloudEventsInOrder(t *testing.T) {
	var mu sync.Mutex
	var got []map[string]any
	var failOnce atomic.Bool
	failOnce.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failOnce.Swap(false) {
			w.WriteHeader(http.StatusServiceUnavailable) // tried again
			return
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/cloudevents+json; charset=utf-8" {
			t.Errorf("content type %q", ct)
		}
		var m map[string]any
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("%s: %v", b, err)
		}
		mu.Lock()
		got = append(got, m)
		mu.Unlock()
	}))
	defer srv.Close()
	s := sender(t, srv.URL)
	for i := range 3 {
		s.Send(event(i))
	}
	waitFor(t, "3 deliveries", func() bool { return s.Stats()[0].Delivered == 3 })
	s.Close(time.Second)
	mu.Lock()
	defer mu.Unlock()
	for i, m := range got {
		if m["specversion"] != "1.0" || m["type"] != "io.monagent.sync-state.v1" || m["source"] != "monagent://boarda" || m["id"] != ID(int64(i), uint64(i)) ||
			m["time"] != "2026-11-18T11:06:40.123456789Z" || m["datacontenttype"] != "application/json" || m["data"].(map[string]any)["n"] != float64(i) {
			t.Errorf("event %d: %v", i, m)
		}
	}
	if st := s.Stats()[0]; st.Retries != 1 || st.Dropped != 0 || st.Queued != 3 || !strings.Contains(st.LastError, "HTTP 503") {
		t.Errorf("stats %+v", st)
	}
}

// A receiver that hangs costs its queue only: Send never waits, the other
// receiver gets everything, the hanging one's overflow is counted.
func TestHangingReceiverCostsOnlyItsQueue(t *testing.T) {
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(hang)
	var n atomic.Int64
	fine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer fine.Close()
	s := sender(t, slow.URL, fine.URL)
	// The Sends alone are timed, not the waits for the fine receiver's HTTP
	// round trips between them (all of it against 3 s, which a loaded or
	// emulated machine's round trips approach): a Send that waited for the
	// hanging receiver would take its 200 ms timeout or more, 50 of them
	// 10 s and more; unhindered they take microseconds.
	var sending time.Duration
	for i := range 50 {
		start := time.Now()
		s.Send(event(i))
		sending += time.Since(start)
		if i%4 == 3 {
			waitFor(t, "the fine receiver", func() bool { return n.Load() == int64(i+1) })
		}
	}
	t.Logf("50 sends took %v", sending)
	if sending > 5*time.Second {
		t.Errorf("50 sends took %v", sending)
	}
	waitFor(t, "the fine receiver", func() bool { return n.Load() == 50 })
	s.Close(50 * time.Millisecond)
	st := s.Stats()
	if st[1].Delivered != 50 || st[1].Dropped != 0 {
		t.Errorf("fine receiver %+v", st[1])
	}
	// Every event is delivered, dropped, or counted as dropped at close.
	if st[0].Delivered != 0 || st[0].Dropped != 50 || st[0].Queued >= 50 {
		t.Errorf("hanging receiver %+v", st[0])
	}
}

func TestRefusedIsNotRetriedAndBadOptions(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	s := sender(t, srv.URL)
	s.Send(event(1))
	waitFor(t, "the drop", func() bool { return s.Stats()[0].Dropped == 1 })
	s.Close(0)
	if n.Load() != 1 {
		t.Errorf("a 400 was sent %d times", n.Load())
	}
	for _, o := range []Options{
		{Receivers: []Receiver{{URL: "ftp://x"}}, Queue: 1, Timeout: 1, MinBackoff: 1, MaxBackoff: 1},
		{Receivers: []Receiver{{URL: "http://u:p@x"}}, Queue: 1, Timeout: 1, MinBackoff: 1, MaxBackoff: 1},
		{Receivers: []Receiver{{URL: "http://x"}}, Queue: 0, Timeout: 1, MinBackoff: 1, MaxBackoff: 1},
		{Receivers: []Receiver{{URL: "http://x"}}, Queue: 1, Timeout: 0, MinBackoff: 1, MaxBackoff: 1},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
