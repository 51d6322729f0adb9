package hca

import (
	"net/netip"
	"strings"
	"testing"
)

func TestParsePeers(t *testing.T) {
	addrs, err := ParsePeers(map[int]string{1: "10.0.0.2:7400", 0: "10.0.0.1:7400", 2: "[fe80::1]:7400"})
	if err != nil || len(addrs) != 3 || addrs[0].String() != "10.0.0.1:7400" || addrs[2].String() != "[fe80::1]:7400" {
		t.Fatalf("ParsePeers: %v, %v", addrs, err)
	}
	for _, tc := range []struct {
		name  string
		peers map[int]string
		want  string
	}{
		{"empty", nil, "empty: list every agent's IP:port by rank, this one's included"},
		{"gap", map[int]string{0: "10.0.0.1:7400", 2: "10.0.0.2:7400"}, "2 peers but no rank 1: ranks must be 0..1"},
		{"host name", map[int]string{0: "node0:7400"}, `rank 0: "node0:7400": want IP:port: `},
		{"shared", map[int]string{0: "10.0.0.1:7400", 1: "10.0.0.1:7400"}, "ranks 0 and 1 share the address 10.0.0.1:7400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ParsePeers(tc.peers); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("ParsePeers: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestClusterSession: the session is pinned (agents of two versions must
// agree on it) and differs with the peer list and the algorithm.
func TestClusterSession(t *testing.T) {
	addrs, err := ParsePeers(map[int]string{0: "10.0.0.1:7400", 1: "10.0.0.2:7400", 2: "[fe80::1]:7400"})
	if err != nil {
		t.Fatal(err)
	}
	c := Cluster{Addrs: addrs, Algorithm: "hca2"}
	if got := c.Session(); got != 0x2935bdff9fcffc47 {
		t.Errorf("session %#x, want 0x2935bdff9fcffc47", got)
	}
	other := []Cluster{{Addrs: addrs, Algorithm: "hca"}, {Addrs: addrs[:2], Algorithm: "hca2"},
		{Addrs: []netip.AddrPort{addrs[1], addrs[0], addrs[2]}, Algorithm: "hca2"}}
	for _, o := range other {
		if o.Session() == c.Session() {
			t.Errorf("%v has the session of %v", o, c)
		}
	}
}

func TestClusterEndpoint(t *testing.T) {
	addrs, err := ParsePeers(map[int]string{0: "10.0.0.1:7400", 1: "10.0.0.2:7401", 2: "10.0.0.3:7402"})
	if err != nil {
		t.Fatal(err)
	}
	c := Cluster{Addrs: addrs, Algorithm: "hca"}
	e := c.Endpoint(1, "")
	if e.Addr != "10.0.0.2:7401" || e.Rank != 1 || e.Session != c.Session() || len(e.Peers) != 2 ||
		e.Peers[0] != addrs[0] || e.Peers[2] != addrs[2] {
		t.Errorf("Endpoint(1, \"\"): %+v", e)
	}
	if _, ok := e.Peers[1]; ok {
		t.Error("rank 1 is its own peer")
	}
	if e := c.Endpoint(0, "0.0.0.0:7400"); e.Addr != "0.0.0.0:7400" {
		t.Errorf("Endpoint(0, 0.0.0.0:7400) binds %s", e.Addr)
	}
}

func TestAlgorithmNames(t *testing.T) {
	names := AlgorithmNames()
	if got := strings.Join(names, ","); got != "skampi,tree,jk,hca,hca2,hca3" {
		t.Errorf("AlgorithmNames %s", got)
	}
	for _, n := range names {
		if a, err := AlgorithmByName(n); err != nil || a.Name() != n {
			t.Errorf("AlgorithmByName(%q): %v, %v", n, a, err)
		}
	}
}
