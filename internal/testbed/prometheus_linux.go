package testbed

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Prometheus is Debian's prometheus server on a loopback port scraping one
// target (job "target").
type Prometheus struct {
	Addr string // its HTTP API, 127.0.0.1:port
	Log  string // its output
	d    daemon
}

// StartPrometheus runs prometheus scraping target (host:port) every
// interval, with the interval as scrape timeout; it is stopped when the
// test ends. It skips the test when prometheus is not installed.
func StartPrometheus(t testing.TB, target string, interval time.Duration) *Prometheus {
	t.Helper()
	iv := fmt.Sprintf("%dms", interval.Milliseconds())
	return StartPrometheusConfig(t, fmt.Sprintf("global: {scrape_interval: %s, scrape_timeout: %s, evaluation_interval: %s}\nscrape_configs:\n  - job_name: target\n    static_configs: [{targets: ['%s']}]\n", iv, iv, iv, target))
}

// StartPrometheusConfig runs prometheus with config (prometheus.yml: its
// scrape jobs, rule files by absolute path) on a loopback port of this
// machine; it is stopped when the test ends. It skips the test when
// prometheus is not installed.
func StartPrometheusConfig(t testing.TB, config string) *Prometheus {
	t.Helper()
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skip("prometheus is not installed (Debian package prometheus)")
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	writeFile(t, conf, []byte(config))
	p := &Prometheus{Addr: "127.0.0.1:" + strconv.Itoa(FreePort(t)), Log: filepath.Join(dir, "prometheus.log")}
	p.d = daemon{name: "prometheus", log: p.Log}
	cmd := exec.Command("prometheus", "--config.file="+conf, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+p.Addr)
	p.d.start(t, cmd, func() bool {
		resp, err := http.Get("http://" + p.Addr + "/-/ready")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == 200
	}, 30*time.Second, 200*time.Millisecond, "prometheus was not ready within 30 s")
	t.Cleanup(func() { p.d.stop(5 * time.Second) })
	return p
}

// Sample is one series of a query's answer: its labels and its values
// (one for an instant vector or a scalar, every sample in the range for a
// range vector), with their times.
type Sample struct {
	Labels map[string]string
	Times  []time.Time
	Values []float64
}

// QueryAll evaluates q at time at and returns every series of its answer;
// a query Prometheus refuses is an error with its message.
func (p *Prometheus) QueryAll(q string, at time.Time) ([]Sample, error) {
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Get("http://" + p.Addr + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status, Error string
		Data          struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("prometheus query %s: %w", q, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus query %s: %s", q, r.Error)
	}
	var series []struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
		Values [][]any           `json:"values"`
	}
	switch r.Data.ResultType {
	case "scalar":
		var v []any
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return nil, err
		}
		series = append(series, struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		}{Value: v})
	default:
		if err := json.Unmarshal(r.Data.Result, &series); err != nil {
			return nil, fmt.Errorf("prometheus query %s: %w", q, err)
		}
	}
	out := make([]Sample, 0, len(series))
	for _, s := range series {
		pts := s.Values
		if s.Value != nil {
			pts = [][]any{s.Value}
		}
		smp := Sample{Labels: s.Metric}
		for _, pt := range pts {
			if len(pt) != 2 {
				continue
			}
			ts, _ := pt[0].(float64)
			vs, _ := pt[1].(string)
			v, err := strconv.ParseFloat(vs, 64)
			if err != nil {
				return nil, fmt.Errorf("prometheus query %s: value %q: %w", q, vs, err)
			}
			smp.Times = append(smp.Times, time.UnixMilli(int64(ts*1e3)))
			smp.Values = append(smp.Values, v)
		}
		out = append(out, smp)
	}
	return out, nil
}

// Query evaluates an instant query at time at and returns its first
// value; a query with no result is an error.
func (p *Prometheus) Query(q string, at time.Time) (float64, error) {
	cl := &http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + p.Addr + "/api/v1/query?query=" + url.QueryEscape(q) + "&time=" + strconv.FormatFloat(float64(at.UnixMilli())/1e3, 'f', 3, 64))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return 0, fmt.Errorf("prometheus query %s: %w", q, err)
	}
	if len(r.Data.Result) == 0 {
		return 0, fmt.Errorf("prometheus query %s: no result", q)
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	return strconv.ParseFloat(s, 64)
}

// Output is what prometheus wrote so far.
func (p *Prometheus) Output() string { return p.d.output() }
