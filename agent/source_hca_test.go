package agent

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/record"
)

// freePorts returns n loopback addresses with ports free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	var conns []net.PacketConn
	for range n {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		out = append(out, c.LocalAddr().String())
	}
	for _, c := range conns {
		c.Close()
	}
	return out
}

func writeKey(t *testing.T, name, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startHCA builds an hca source of rank with a quick schedule.
func startHCA(t *testing.T, rank int, addrs []string, keyFile string) *hcaSource {
	t.Helper()
	cfg := Default()
	c := &cfg.HCA
	c.Enabled, c.Rank, c.KeyFile = true, rank, keyFile
	c.Peers = map[int]string{}
	for r, a := range addrs {
		c.Peers[r] = a
	}
	c.Fitpoints, c.Exchanges, c.Spacing, c.Timeout, c.RetryAfter = 3, 3, 5*time.Millisecond, 50*time.Millisecond, 100*time.Millisecond
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	srcs, err := buildHCASource(&Env{Config: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	s := srcs[0].(*hcaSource)
	t.Cleanup(func() { s.Close() })
	return s
}

func selfField(s *hcaSource, key string) (record.Field, bool) {
	for _, f := range s.SelfFields() {
		if f.Key == key {
			return f, true
		}
	}
	return record.Field{}, false
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHCASourceBadPeers: a peer that never answers, one with another key,
// one with another peer list: each round fails with a clear error and a
// counter while the agent keeps running; once the peer is right the round
// succeeds, and a rank whose driver is gone keeps its model, its bound
// growing.
func TestHCASourceBadPeers(t *testing.T) {
	addrs := freePorts(t, 3)
	key := writeKey(t, "key", "0123456789abcdef0123456789abcdef-cluster")
	root := startHCA(t, 0, addrs[:2], key)

	failures := func() uint64 { f, _ := selfField(root, "round_failures"); return f.U }
	lastErr := func() string { f, _ := selfField(root, "last_error"); return f.S }
	eventually(t, "a failed round", func() bool { return failures() >= 1 })
	if e := lastErr(); !strings.Contains(e, "rank 1 does not answer") {
		t.Errorf("last_error %q does not say rank 1 does not answer", e)
	}

	// Another key: rank 1 drops rank 0's pings as unauthenticated.
	wrong := startHCA(t, 1, addrs[:2], writeKey(t, "wrong", "another-key-of-at-least-thirty-two-bytes"))
	eventually(t, "unauthenticated drops", func() bool { f, _ := selfField(wrong, "dropped_unauthenticated"); return f.U > 0 })
	wrong.Close()

	// Another peer list (another session): foreign-session drops.
	other := startHCA(t, 1, addrs, key)
	eventually(t, "foreign-session drops", func() bool { f, _ := selfField(other, "dropped_foreign_session"); return f.U > 0 })
	other.Close()
	if r, _ := selfField(root, "rounds"); r.U != 0 {
		t.Fatalf("%d rounds succeeded with no good peer", r.U)
	}

	// The right peer: a round succeeds and rank 1 gets its model.
	node := startHCA(t, 1, addrs[:2], key)
	eventually(t, "a successful round", func() bool { r, _ := selfField(root, "rounds"); return r.U >= 1 })
	eventually(t, "rank 1's model", func() bool { _, _, ok := node.global.Model(); return ok })
	b := &Batch{host: "h"}
	if err := root.Collect(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var sawModel, sawSync bool
	for _, r := range b.Records {
		sawModel = sawModel || r.Measurement == "hca_model"
		sawSync = sawSync || r.Measurement == "hca_sync"
	}
	if !sawModel || !sawSync {
		t.Errorf("rank 0 shipped %d records without hca_model and hca_sync: %v", len(b.Records), b.Records)
	}

	// The driver gone, rank 1 keeps its model; its bound grows.
	root.Close()
	b1, _ := selfField(node, "bound_now_ns")
	time.Sleep(200 * time.Millisecond)
	b2, ok := selfField(node, "bound_now_ns")
	if !ok || b2.I <= b1.I {
		t.Errorf("rank 1's bound went from %d to %d ns (present %v): want it kept and growing", b1.I, b2.I, ok)
	}
}
