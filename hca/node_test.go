package hca

import (
	"context"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/monagent/monagent/timebase"
)

// freeAddrs are n loopback addresses whose ports were free a moment ago.
func freeAddrs(t *testing.T, n int) []netip.AddrPort {
	t.Helper()
	var out []netip.AddrPort
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c.LocalAddr().(*net.UDPAddr).AddrPort())
		c.Close()
	}
	return out
}

// A rank other than 0 takes its model from rank 0 into its Global, tells
// OnModel before it counts it, and refuses a model from another rank.
func TestNodeTakesModelsFromRankZeroOnly(t *testing.T) {
	cl := Cluster{Addrs: freeAddrs(t, 3), Algorithm: "hca"}
	g := NewGlobal(0, 0)
	var n *Node
	seen := make(chan NodeStats, 1)
	n, err := NewNode(NodeConfig{Cluster: cl, Rank: 1, Key: testKey, Timeout: 100 * time.Millisecond, Global: g,
		OnModel: func(round int64, m timebase.LinearModel) { seen <- n.Stats() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if n.LocalAddr() != cl.Addrs[1] {
		t.Errorf("node bound to %v, want its peer address %v", n.LocalAddr(), cl.Addrs[1])
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve after its context ended: %v, want nil", err)
		}
	})
	var eps [3]*Endpoint
	for _, r := range []int{0, 2} {
		cfg := cl.Endpoint(r, "")
		cfg.Key, cfg.Clock, cfg.Timeout = testKey, g.Now, 100*time.Millisecond
		eps[r] = listen(t, cfg)
		serve(t, eps[r])
	}
	m := timebase.LinearModel{Intercept: -7, Slope: 3e-6, N: 20, SlopeErr: 1e-9}
	if err := eps[2].SendModel(ctx, 1, 5, m); err != nil {
		t.Fatalf("rank 2's model: %v", err)
	}
	if st := n.Stats(); st.ModelsRefused != 1 || st.ModelsTaken != 0 {
		t.Errorf("after rank 2's model: refused %d, taken %d; want 1, 0", st.ModelsRefused, st.ModelsTaken)
	}
	if _, _, ok := g.Model(); ok {
		t.Error("Global took rank 2's model")
	}
	if err := eps[0].SendModel(ctx, 1, 6, m); err != nil {
		t.Fatalf("rank 0's model: %v", err)
	}
	if got, round, ok := g.Model(); !ok || round != 6 || got != m {
		t.Errorf("Global has %+v round %d (%v), want rank 0's %+v round 6", got, round, ok, m)
	}
	select {
	case st := <-seen:
		if st.ModelsTaken != 0 {
			t.Errorf("OnModel saw models_taken %d: it runs before the count", st.ModelsTaken)
		}
	default:
		t.Error("OnModel was not called")
	}
	if st := n.Stats(); st.ModelsTaken != 1 || st.Models != 2 {
		t.Errorf("taken %d, endpoint models %d; want 1, 2", st.ModelsTaken, st.Models)
	}
}

// Rank 0's clock is the timeline: its Global holds the identity at once.
func TestNodeRankZeroIsTheTimeline(t *testing.T) {
	cl := Cluster{Addrs: freeAddrs(t, 2), Algorithm: "hca"}
	alg, err := AlgorithmByName("hca")
	if err != nil {
		t.Fatal(err)
	}
	g := NewGlobal(0, 0)
	n, err := NewNode(NodeConfig{Cluster: cl, Rank: 0, Key: testKey, Timeout: 100 * time.Millisecond, Global: g,
		Algorithm: alg, Params: DefaultParams(), Resync: time.Minute, MaxBound: time.Millisecond, RetryAfter: time.Second,
		OnRound: func(Round) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if m, round, ok := g.Model(); !ok || round != 0 || m != timebase.Identity {
		t.Errorf("rank 0's Global: %+v round %d (%v), want the identity", m, round, ok)
	}
	if _, err := NewNode(NodeConfig{Cluster: cl, Rank: 0, Listen: "127.0.0.1:0", Key: testKey, Global: NewGlobal(0, 0), Algorithm: alg}); err == nil {
		t.Error("NewNode of rank 0 without a schedule succeeded")
	}
}
