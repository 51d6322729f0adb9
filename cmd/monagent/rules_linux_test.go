package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// The guard of MonagentShipperStalled, against the real agent: the rule
// fires only where monagent_influx_state exists (promtool's unit test of the
// rule covers both cases), so that series must be on /metrics exactly when an
// influx section is configured. Without one (configs/local.yaml) the spool
// only grows and nothing acknowledges it, and a real Prometheus fired the
// alert after 15 minutes on every such board.
func TestShipperStalledGuardSeries(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // an InfluxDB that never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for _, influx := range []bool{false, true} {
		t.Run(fmt.Sprintf("influx=%v", influx), func(t *testing.T) {
			dir := t.TempDir()
			addr := fmt.Sprintf("127.0.0.1:%d", testbed.FreePort(t))
			body := "clock: {interval: 200ms}\nphc: {enabled: false}\noutput: {stdout: false}\nself_metrics: {interval: 500ms}\n" +
				"spool: {dir: " + filepath.Join(dir, "spool") + "}\n"
			if influx {
				body += fmt.Sprintf("influx:\n  enabled: true\n  url: http://%s\n  bucket: db/rp\n  timeout: 1s\n", silent.Addr())
			}
			cfg := writeConfig(t, dir, body)
			startAgent(t, dir, cfg, "--duration", "30s", "--http", addr)
			defer logOnFailure(t, filepath.Join(dir, "agent.log"))
			var metrics string
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					metrics = string(b)
					if strings.Contains(metrics, "monagent_spool_pending") {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatalf("no monagent_spool_pending on /metrics within 30 s:\n%s", metrics)
				}
			}
			if got := strings.Contains(metrics, "monagent_influx_state{"); got != influx {
				t.Errorf("monagent_influx_state on /metrics: %v, want %v (influx section configured: %v)", got, influx, influx)
			}
		})
	}
}
