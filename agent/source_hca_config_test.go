package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/monagent/monagent/hca"
)

func TestHCAConfigErrors(t *testing.T) {
	const base = "hca:\n  enabled: true\n  key_file: /k\n  rank: %RANK%\n  peers:\n%PEERS%"
	cfg := func(rank, peers string) string {
		return strings.NewReplacer("%RANK%", rank, "%PEERS%", peers).Replace(base)
	}
	two := "    0: \"10.0.0.1:7400\"\n    1: \"10.0.0.2:7400\"\n"
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"duplicate rank", cfg("0", "    0: \"10.0.0.1:7400\"\n    0: \"10.0.0.2:7400\"\n"), "hca.peers.0: given twice (first on line 6)"},
		{"gap in ranks", cfg("0", "    0: \"10.0.0.1:7400\"\n    2: \"10.0.0.2:7400\"\n"), "no rank 1"},
		{"shared address", cfg("0", "    0: \"10.0.0.1:7400\"\n    1: \"10.0.0.1:7400\"\n"), "ranks 0 and 1 share the address"},
		{"host name", cfg("0", "    0: \"node0:7400\"\n"), "want IP:port"},
		{"rank not a peer", cfg("2", two), "hca.rank: 2 is not among the peers' ranks 0..1"},
		{"unknown algorithm", cfg("0", two) + "  algorithm: ntp\n", "hca.algorithm: \"ntp\""},
		{"drift", cfg("0", two) + "  test_clock: {drift_ppm: 900}\n", "hca.test_clock.drift_ppm"},
		{"no ping-pongs", cfg("0", two) + "  pingpongs: 0\n", "hca.pingpongs: 0: want at least 1"},
		{"no key", strings.Replace(cfg("0", two), "  key_file: /k\n", "", 1), "hca.key_file: must be set"},
		{"peers a list", "hca:\n  enabled: true\n  key_file: /k\n  peers: [a, b]\n", "hca.peers: want a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Parse("c.yaml", []byte(cfg("1", two))); err != nil {
		t.Fatalf("a good section: %v", err)
	}
}

// TestHCADefaultsAreTheSims: the hca section's defaults are hca.DefaultParams,
// the ones 'monagent hca sim' runs with and docs/performance measures.
func TestHCADefaultsAreTheSims(t *testing.T) {
	cfg := Default()
	got, want := cfg.HCA.params(), hca.DefaultParams()
	if got != want {
		t.Errorf("the hca section's defaults give %+v, want hca.DefaultParams %+v", got, want)
	}
}

// TestHCAPreflightKeyFile: preflight refuses a key file others may read,
// and one LoadKey refuses, both under hca.key_file.
func TestHCAPreflightKeyFile(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, key string
		mode      os.FileMode
		want      string // "" for no problem
	}{
		{"good", testHCAKey, 0o600, ""},
		{"open", testHCAKey, 0o644, "hca.key_file: " + filepath.Join(dir, "open") + ": mode 0644 lets others read the cluster key; make it 0600"},
		{"short", "short", 0o600, "hca.key_file: hca: key file " + filepath.Join(dir, "short") + ": 5 bytes after trimming whitespace, want at least 32"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := os.WriteFile(p, []byte(tc.key), tc.mode); err != nil {
				t.Fatal(err)
			}
			cfg := hcaConfig(t, 0, []string{"127.0.0.1:7400", "127.0.0.1:7401"}, p)
			err := cfg.Preflight()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Preflight: %v, want %q", err, tc.want)
			}
		})
	}
}

// /status on HCA rank 0 says what it is: the reference of the global
// timeline, which judges nothing (monagent status then exits 0).
func TestStatusOfHCARankZeroNamesTheReference(t *testing.T) {
	for rank, want := range map[int]bool{0: true, 1: false} {
		cfg := Default()
		cfg.HCA.Enabled, cfg.HCA.Rank = true, rank
		a := bare(cfg, nil, nil, "boarda")
		if got := a.judges.Status(1).Reference != ""; got != want {
			t.Errorf("rank %d: reference %q", rank, a.judges.Status(1).Reference)
		}
	}
}
