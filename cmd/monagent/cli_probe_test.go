package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIProbeChecksTheConfiguredInflux runs probe --config with an influx
// section against a server that knows one token and one bucket. probe exits
// 1 when the configured InfluxDB cannot take the agent's writes (before: 0
// whatever it found), with the verdict printed as ever.
func TestCLIProbeChecksTheConfiguredInflux(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/ping":
			w.Header().Set("X-Influxdb-Version", "1.8.10")
			w.WriteHeader(http.StatusNoContent)
		case r.Header.Get("Authorization") != "Token user:pass":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Query().Get("bucket") != "db/rp":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	for _, c := range []struct {
		name, token, bucket, want string
		ok                        bool
	}{
		{"ok", "user:pass", "db/rp", "reachable, token accepted for the bucket", true},
		{"wrong token", "user:nope", "db/rp", "reachable, but token refused: check influx.token_file", false},
		{"no bucket", "user:pass", "other/rp", `reachable, but bucket/database not found: create "other/rp"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(tokenFile, []byte(c.token+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg := writeConfig(t, dir, "spool:\n  dir: spool\ninflux:\n  enabled: true\n  url: "+srv.URL+"\n  bucket: "+c.bucket+"\n  token_file: "+tokenFile+"\n")
			want := map[bool]int{true: 0, false: 1}[c.ok]
			stdout, stderr, code := run(t, dir, "probe", "--config", cfg)
			if code != want || !strings.Contains(stdout, "InfluxDB "+srv.URL) || !strings.Contains(stdout, c.want) {
				t.Fatalf("exit %d (want %d), want %q in:\n%s%s", code, want, c.want, stdout, stderr)
			}
			stdout, stderr, code = run(t, dir, "probe", "--json", "--config", cfg)
			var inv struct {
				Influx *struct {
					Reachable   bool `json:"reachable"`
					WriteOK     bool `json:"write_ok"`
					WriteStatus int  `json:"write_status"`
				} `json:"influx"`
			}
			if err := json.Unmarshal([]byte(stdout), &inv); code != want || err != nil || inv.Influx == nil {
				t.Fatalf("probe --json: exit %d, %v\n%s%s", code, err, stdout, stderr)
			}
			if !inv.Influx.Reachable || inv.Influx.WriteOK != c.ok || inv.Influx.WriteStatus == 0 {
				t.Errorf("influx in JSON: %+v", *inv.Influx)
			}
		})
	}
	notInflux := httptest.NewServer(http.NotFoundHandler())
	defer notInflux.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, u := range []string{notInflux.URL, gone.URL} {
		cfg := writeConfig(t, dir, "spool:\n  dir: spool\ninflux:\n  enabled: true\n  url: "+u+"\n  bucket: db/rp\n  token_file: "+tokenFile+"\n")
		if stdout, stderr, code := run(t, dir, "probe", "--config", cfg); code != 1 || !strings.Contains(stderr, "cannot take the agent's writes") {
			t.Errorf("%s: exit %d, want 1 naming why:\n%s%s", u, code, stdout, stderr)
		}
	}
	stdout, _, _ := run(t, dir, "probe")
	if strings.Contains(stdout, "InfluxDB") {
		t.Errorf("probe without a configuration probed InfluxDB:\n%s", stdout)
	}
}

// TestCLIProbeJSONSaysWhy runs probe --json on a machine with nothing under
// the configured paths: every list is [] (never null), each empty list's
// reason is in "absent" as the text gives it, and the TAI-UTC note is there
// exactly when the kernel has no TAI offset.
func TestCLIProbeJSONSaysWhy(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "paths:\n  sys: "+dir+"/sys\n  dev: "+dir+"/dev\n  run: "+dir+"/run\n")
	stdout, stderr, code := run(t, dir, "probe", "--json", "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var inv map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &inv); err != nil {
		t.Fatalf("probe --json: %v\n%s", err, stdout)
	}
	var absent map[string]string
	if err := json.Unmarshal(inv["absent"], &absent); err != nil {
		t.Fatalf("absent: %v\n%s", err, stdout)
	}
	text, _, _ := run(t, dir, "probe", "--config", cfg)
	for _, k := range []string{"phcs", "interfaces", "gpio_chips", "gpio", "pps", "iio", "hwmon", "thermal_zones", "notes"} {
		if string(inv[k]) != "[]" {
			t.Errorf("%s is %s, want []", k, inv[k])
		}
	}
	for _, k := range []string{"phcs", "gpio_chips", "pps", "iio", "hwmon", "thermal_zones"} {
		if absent[k] == "" || !strings.Contains(text, "absent: "+absent[k]+"\n") {
			t.Errorf("absent.%s is %q; the text:\n%s", k, absent[k], text)
		}
	}
	var kernel struct {
		TAIOffsetS int64  `json:"tai_offset_s"`
		Note       string `json:"tai_utc_note"`
	}
	if raw, ok := inv["kernel_clock"]; ok {
		if err := json.Unmarshal(raw, &kernel); err != nil {
			t.Fatal(err)
		}
		if (kernel.TAIOffsetS == 0) != (kernel.Note != "") || kernel.Note != "" && !strings.Contains(text, kernel.Note) {
			t.Errorf("TAI-UTC %d s, note %q; the text:\n%s", kernel.TAIOffsetS, kernel.Note, text)
		}
	}
}
