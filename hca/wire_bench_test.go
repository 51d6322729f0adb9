package hca

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCodecPingPong encodes and authenticates a ping and its pong, as
// the two ends of one exchange do (four HMAC-SHA256 computations).
func BenchmarkCodecPingPong(b *testing.B) {
	c := newCodec(testKey)
	buf := make([]byte, 0, maxMessageLen)
	ping := goldenMessages[0].msg
	pong := goldenMessages[1].msg
	b.ReportAllocs()
	for b.Loop() {
		buf = c.append(buf[:0], ping)
		if _, err := c.decode(buf); err != nil {
			b.Fatal(err)
		}
		buf = c.append(buf[:0], pong)
		if _, err := c.decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEndpointPing is one authenticated ping-pong between two
// endpoints over loopback, both Serve loops running: send, the peer's read,
// answer and the pong's delivery, with kernel receive stamps where the
// kernel gives them.
func BenchmarkEndpointPing(b *testing.B) {
	base := time.Now()
	var eps []*Endpoint
	for r := range 2 {
		e, err := Listen(EndpointConfig{Addr: "127.0.0.1:0", Rank: r, Key: testKey, Session: 1, Clock: fakeClock(base, 0), Timeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		defer e.Close()
		eps = append(eps, e)
	}
	if err := eps[0].SetPeer(1, eps[1].LocalAddr()); err != nil {
		b.Fatal(err)
	}
	if err := eps[1].SetPeer(0, eps[0].LocalAddr()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, e := range eps {
		go e.Serve(ctx)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := eps[0].Ping(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}
