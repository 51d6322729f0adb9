package status

import (
	"testing"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/conf/conftest"
)

// The defaults pass their own checks and are the server's defaults.
func TestHTTPConfigDefaults(t *testing.T) {
	var h HTTPConfig
	h.Defaults()
	var p conf.List
	h.Check(&p)
	if len(p.Problems) != 0 || h.Listen != DefaultHTTPListen || h.Pprof || h.Limits() != DefaultLimits() {
		t.Fatalf("defaults %+v: problems %v, limits %+v", h, p.Problems, h.Limits())
	}
}

// Check names each bad key and says what it wants.
func TestHTTPConfigCheck(t *testing.T) {
	conftest.Checks(t, nil, []struct {
		Change func(*HTTPConfig)
		Want   string
	}{
		{func(h *HTTPConfig) { h.Listen = "" }, ""},
		{func(h *HTTPConfig) { h.Listen = ":9469" }, ""},
		{func(h *HTTPConfig) { h.Listen = "localhost:0" }, ""},
		{func(h *HTTPConfig) { h.Listen = "9469" }, `http.listen: "9469" is not host:port (127.0.0.1:9469, :9469; "" turns the endpoint off)`},
		{func(h *HTTPConfig) { h.Listen = "127.0.0.1:http" }, `http.listen: port "http" is not a number from 0 to 65535`},
		{func(h *HTTPConfig) { h.Listen = "127.0.0.1:65536" }, `http.listen: port "65536" is not a number from 0 to 65535`},
		{func(h *HTTPConfig) { h.Listen = "boarda:9469" }, `http.listen: host "boarda" is not an IP address (or localhost)`},
		{func(h *HTTPConfig) { h.MaxConnections = 1 }, "http.max_connections: "},
		{func(h *HTTPConfig) { h.IdleTimeout = 0 }, "http.idle_timeout: "},
		{func(h *HTTPConfig) { h.ReadTimeout = 0 }, "http.read_timeout: "},
		{func(h *HTTPConfig) { h.MaxHeaderBytes = 2 << 20 }, "http.max_header_bytes: "},
	})
}

// MemoryBytes counts every connection with its headers twice, a header
// limit beyond its range as the largest.
func TestHTTPConfigMemoryBytes(t *testing.T) {
	h := HTTPConfig{MaxConnections: 2, MaxHeaderBytes: 4 << 10}
	if got, want := h.MemoryBytes(), int64(2*(64<<10+2*8<<10)); got != want {
		t.Errorf("2 connections, 4 KiB headers: %d, want %d", got, want)
	}
	h.MaxHeaderBytes = 1 << 30
	if got, want := h.MemoryBytes(), int64(2*(64<<10+2*(1<<20+4<<10))); got != want {
		t.Errorf("a header limit beyond its range: %d, want %d", got, want)
	}
}
