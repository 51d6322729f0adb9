package inventory

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Influx is the InfluxDB the agent is configured to write to (its influx
// section): where, which bucket, and the token.
type Influx struct {
	URL, Org, Bucket string
	// TokenFile or else TokenEnv is where the token comes from, named when
	// InfluxDB refuses it.
	TokenFile, TokenEnv string
	// Token reads the token; nil sends none.
	Token func() (string, error)
}

// InfluxProbe is the answer of the configured InfluxDB to a ping and to an
// empty write with the configured token.
type InfluxProbe struct {
	URL         string `json:"url"`
	Bucket      string `json:"bucket"`
	Reachable   bool   `json:"reachable"`
	PingStatus  int    `json:"ping_status,omitempty"`
	WriteStatus int    `json:"write_status,omitempty"`
	WriteOK     bool   `json:"write_ok"`
	Detail      string `json:"detail,omitempty"` // what is wrong and what to fix
}

// probeInflux asks the configured InfluxDB whether it answers (GET /ping) and
// whether it takes the token for the bucket (POST /api/v2/write with an empty
// body: 204 means yes), each request bounded to 2 s, and says what to fix.
func probeInflux(ctx context.Context, client *http.Client, c Influx) InfluxProbe {
	ip := InfluxProbe{URL: c.URL, Bucket: c.Bucket}
	base := strings.TrimRight(c.URL, "/")
	status, _, h, err := influxRequest(ctx, client, http.MethodGet, base+"/ping", "")
	if err != nil {
		ip.Detail = "unreachable: " + err.Error() + ": check influx.url and that InfluxDB runs"
		return ip
	}
	ip.Reachable, ip.PingStatus = true, status
	// Every InfluxDB (1.x, 2.x, 3.x) answers /ping 204 and names its version
	// (X-Influxdb-Version): another server on the port is no InfluxDB.
	if status != http.StatusNoContent || h.Get("X-Influxdb-Version") == "" {
		ip.Detail = fmt.Sprintf("not InfluxDB: GET /ping answered %d without an X-Influxdb-Version header: check influx.url", status)
		return ip
	}
	var token string
	if c.Token != nil {
		if token, err = c.Token(); err != nil {
			ip.Detail = err.Error()
			return ip
		}
	}
	q := url.Values{"bucket": {c.Bucket}, "org": {c.Org}, "precision": {"ns"}}
	status, body, _, err := influxRequest(ctx, client, http.MethodPost, base+"/api/v2/write?"+q.Encode(), token)
	if err != nil {
		ip.Detail = "write: " + err.Error()
		return ip
	}
	ip.WriteStatus = status
	tokenKey := "influx.token_file"
	if c.TokenFile == "" {
		tokenKey = "influx.token_env ($" + c.TokenEnv + ")"
	}
	switch {
	case status >= 200 && status < 300:
		ip.WriteOK = true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		ip.Detail = "token refused: check " + tokenKey
	case status == http.StatusNotFound:
		ip.Detail = fmt.Sprintf("bucket/database not found: create %q or fix influx.bucket and influx.org", c.Bucket)
	default:
		ip.Detail = fmt.Sprintf("write answered %d", status)
	}
	if body != "" && !ip.WriteOK {
		ip.Detail += " (InfluxDB: " + body + ")"
	}
	return ip
}

// influxRequest makes one request with a 2 s limit and returns the status,
// the first line of the body (at most 200 bytes) and the headers.
func influxRequest(ctx context.Context, client *http.Client, method, u, token string) (int, string, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, http.NoBody)
	if err != nil {
		return 0, "", nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Token "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return resp.StatusCode, line, resp.Header, nil
}

func (inv *Inventory) writeInflux(pf func(string, ...any)) {
	ip := inv.Influx
	if ip == nil {
		return
	}
	pf("\nInfluxDB %s, bucket %q:\n", ip.URL, ip.Bucket)
	switch {
	case ip.WriteOK:
		pf("  reachable, token accepted for the bucket\n")
	case ip.Reachable:
		pf("  reachable, but %s\n", ip.Detail)
	default:
		pf("  %s\n", ip.Detail)
	}
}
