package agent

import (
	"net/netip"
	"strings"
	"time"

	"github.com/monagent/monagent/hca"
)

// HCAConfig is the clock synchronisation between agents (source_hca.go):
// every agent of a cluster runs an authenticated UDP endpoint; rank 0
// drives the algorithm, gives every rank its model of its
// CLOCK_MONOTONIC_RAW against rank 0's (the global timeline) and ships the
// models; the other ranks answer and run exchanges when asked. Markers and
// GPIO edges then carry global_ns and global_bound_ns.
type HCAConfig struct {
	Enabled bool `yaml:"enabled"`
	Rank    int  `yaml:"rank"` // this agent's rank; 0 drives the synchronisation
	// Listen is the UDP address to bind; default: this rank's peer address.
	Listen string `yaml:"listen"`
	// Peers is every agent's IP:port by rank, this one included: ranks
	// 0..n-1, the same list on every agent (the session is derived from it,
	// so agents with different lists ignore each other and count it).
	Peers   map[int]string `yaml:"peers"`
	KeyFile string         `yaml:"key_file"` // the cluster key (≥ 32 bytes), readable by the agent only
	// Algorithm is hca, hca2, hca3, jk, skampi or tree.
	Algorithm string        `yaml:"algorithm"`
	Fitpoints int           `yaml:"fitpoints"` // per fitted line
	Exchanges int           `yaml:"exchanges"` // ping-pongs per fitpoint
	Spacing   time.Duration `yaml:"spacing"`   // between a pair's fitpoints
	// PingPongs is the most ping-pongs of one SKaMPI offset measurement
	// (HCA's and HCA2's intercepts, the offset-only algorithms): more
	// narrow its interval ('monagent hca sim --pingpongs').
	PingPongs int           `yaml:"pingpongs"`
	Timeout   time.Duration `yaml:"timeout"` // for one ping's answer
	// Resync is the longest time between two syncs; MaxBound makes one
	// sooner, when the bound predicted for any rank's model would exceed it.
	// A failed round is retried after RetryAfter.
	Resync     time.Duration `yaml:"resync"`
	MaxBound   time.Duration `yaml:"max_bound"`
	RetryAfter time.Duration `yaml:"retry_after"`
	Interval   time.Duration `yaml:"interval"` // how often the section's records are shipped
	// Judge judges this rank's clock on the global timeline, by the model
	// rank 0 gives it (clock "hca", source "hca:rank<N>"; not on rank 0,
	// whose clock is the timeline). Default: LOCKED while the model's bound
	// is within max_bound, holdover resync plus a retry.
	Judge JudgeConfig `yaml:"judge"`
	// TestClock replaces this agent's CLOCK_MONOTONIC_RAW with a virtual
	// clock t + drift·t + offset over it, for tests of the synchronisation
	// on one host. Never set it on a board.
	TestClock *HCATestClock `yaml:"test_clock"`
}

// HCATestClock is a virtual clock's offset and drift (test only).
type HCATestClock struct {
	Offset   time.Duration `yaml:"offset"`
	DriftPPM float64       `yaml:"drift_ppm"`
}

func (h *HCAConfig) defaults() {
	p := hca.DefaultParams()
	*h = HCAConfig{Algorithm: "hca", Fitpoints: p.Fitpoints, Exchanges: p.Exchanges, Spacing: time.Duration(p.SpacingNS), PingPongs: p.MaxPingPongs,
		Timeout: hca.DefaultPingTimeout, Resync: time.Minute, MaxBound: 50 * time.Microsecond, RetryAfter: 10 * time.Second,
		Interval: time.Second,
		Judge:    JudgeConfig{Enabled: true, Threshold: 50 * time.Microsecond, Holdover: 70 * time.Second, MinSamples: 1}}
}

func (h *HCAConfig) check(ps *problems) {
	if !h.Enabled {
		return
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{{"hca.spacing", h.Spacing + 1}, {"hca.timeout", h.Timeout}, {"hca.resync", h.Resync},
		{"hca.max_bound", h.MaxBound}, {"hca.retry_after", h.RetryAfter}} {
		ps.Positive(d.key, d.v)
	}
	ps.Interval("hca.interval", h.Interval)
	if _, err := hca.AlgorithmByName(h.Algorithm); err != nil {
		ps.Add("hca.algorithm", "%q: want one of %s", h.Algorithm, strings.Join(hca.AlgorithmNames(), ", "))
	}
	if h.PingPongs < 1 {
		ps.Add("hca.pingpongs", "%d: want at least 1", h.PingPongs)
	} else if err := h.params().Validate(); err != nil {
		ps.Add("hca", "%v", err)
	}
	if _, err := hca.ParsePeers(h.Peers); err != nil {
		ps.Add("hca.peers", "%v", err)
	} else if _, ok := h.Peers[h.Rank]; !ok {
		ps.Add("hca.rank", "%d is not among the peers' ranks 0..%d", h.Rank, len(h.Peers)-1)
	}
	if h.Listen != "" {
		if _, err := netip.ParseAddrPort(h.Listen); err != nil {
			ps.Add("hca.listen", "%q: want IP:port (0.0.0.0:7400): %v", h.Listen, err)
		}
	}
	ps.Set("hca.key_file", h.KeyFile, ": the cluster key authenticates every message")
	if tc := h.TestClock; tc != nil && (tc.DriftPPM < -500 || tc.DriftPPM > 500) {
		ps.Add("hca.test_clock.drift_ppm", "%g: at most ±500 ppm", tc.DriftPPM)
	}
}

// board checks the key file.
func (h *HCAConfig) board(_ PathsConfig, ps *problems) {
	if !h.Enabled || h.KeyFile == "" {
		return
	}
	if err := hca.CheckKeyFile(h.KeyFile); err != nil {
		ps.Put(&KeyError{Key: "hca.key_file", Reason: err.Error(), Err: err})
	}
}

// params are the algorithm's parameters.
func (h *HCAConfig) params() hca.Params {
	p := hca.DefaultParams()
	p.Fitpoints, p.Exchanges, p.SpacingNS = h.Fitpoints, h.Exchanges, int64(h.Spacing)
	p.MaxPingPongs, p.MinPingPongs = h.PingPongs, min(p.MinPingPongs, h.PingPongs)
	return p
}

// hcaReference is what an HCA agent is to the others, for /status: rank 0
// is the global timeline itself, and judges nothing; "" for any other agent.
func hcaReference(h HCAConfig) string {
	if !h.Enabled || h.Rank != 0 {
		return ""
	}
	return "HCA rank 0: the reference of the global timeline (the other ranks' hca clocks are judged against it; it has none to judge)"
}
