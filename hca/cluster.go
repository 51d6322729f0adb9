package hca

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ParsePeers parses a cluster's peer list, rank → IP:port: ranks 0..n-1,
// no address twice. It returns the addresses by rank.
func ParsePeers(peers map[int]string) ([]netip.AddrPort, error) {
	n := len(peers)
	if n == 0 {
		return nil, fmt.Errorf("empty: list every agent's IP:port by rank, this one's included")
	}
	addrs := make([]netip.AddrPort, n)
	for r := range n {
		s, ok := peers[r]
		if !ok {
			return nil, fmt.Errorf("%d peers but no rank %d: ranks must be 0..%d", n, r, n-1)
		}
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			return nil, fmt.Errorf("rank %d: %q: want IP:port: %v", r, s, err)
		}
		if i := slices.Index(addrs[:r], a); i >= 0 {
			return nil, fmt.Errorf("ranks %d and %d share the address %s", i, r, a)
		}
		addrs[r] = a
	}
	return addrs, nil
}

// Cluster is the ranks that synchronise together. Every member is
// configured with the same peer list and algorithm.
type Cluster struct {
	Addrs     []netip.AddrPort // every rank's address by rank, its own included (ParsePeers)
	Algorithm string
}

// Session is the cluster's session ID, derived from its peer list and
// algorithm, so that endpoints configured with different lists drop each
// other's messages as foreign-session, counted, instead of mixing two
// clusters.
func (c Cluster) Session() uint64 {
	var b strings.Builder
	b.WriteString("monagent-hca-session/1 " + c.Algorithm)
	for r, a := range c.Addrs {
		b.WriteString(" " + strconv.Itoa(r) + "=" + a.String())
	}
	sum := sha256.Sum256([]byte(b.String()))
	return binary.BigEndian.Uint64(sum[:8])
}

// Endpoint is the EndpointConfig of rank's member: bound to listen, or to
// the rank's own address when listen is "", every other rank its peer, in
// the cluster's session. The caller adds the key, the clock and the rest.
func (c Cluster) Endpoint(rank int, listen string) EndpointConfig {
	if listen == "" && rank >= 0 && rank < len(c.Addrs) {
		listen = c.Addrs[rank].String()
	}
	peers := make(map[int]netip.AddrPort, len(c.Addrs))
	for r, a := range c.Addrs {
		if r != rank {
			peers[r] = a
		}
	}
	return EndpointConfig{Addr: listen, Rank: rank, Peers: peers, Session: c.Session()}
}
