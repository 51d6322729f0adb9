package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/marker"
)

// grafanaTarget is one query of one panel of configs/grafana/monagent.json.
type grafanaTarget struct {
	Panel, RefID, Query string
}

// grafanaDashboard reads the dashboard and returns every panel query (rows'
// nested panels included) and the template variables' queries, checking the
// shape Grafana needs: raw InfluxQL on the templated InfluxDB datasource.
func grafanaDashboard(t *testing.T, path string) (targets []grafanaTarget, variables map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type datasource struct{ Type, UID string }
	type panel struct {
		Type       string
		Title      string
		Datasource *datasource
		Targets    []struct {
			RefID      string `json:"refId"`
			Query      string
			RawQuery   bool `json:"rawQuery"`
			Datasource *datasource
		}
		Panels []json.RawMessage
	}
	var d struct {
		SchemaVersion int
		Templating    struct {
			List []struct {
				Name, Type string
				Query      any
			}
		}
		Panels []json.RawMessage
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if d.SchemaVersion < 36 || d.SchemaVersion > 39 {
		t.Errorf("schemaVersion %d, want Grafana 9/10's (36–39)", d.SchemaVersion)
	}
	variables = map[string]string{}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		variables[v.Name] = q
		if v.Name == "DS_INFLUXDB" && (v.Type != "datasource" || q != "influxdb") {
			t.Errorf("variable DS_INFLUXDB: type %q query %q, want a datasource variable of type influxdb", v.Type, q)
		}
	}
	if _, ok := variables["DS_INFLUXDB"]; !ok {
		t.Error("no DS_INFLUXDB datasource variable")
	}
	if variables["host"] != `SHOW TAG VALUES WITH KEY = "host"` {
		t.Errorf("host variable query %q", variables["host"])
	}
	titles := map[string]bool{}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, r := range ps {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if titles[p.Title] {
				t.Errorf("two panels titled %q", p.Title)
			}
			titles[p.Title] = true
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				ds := tg.Datasource
				if ds == nil {
					ds = p.Datasource
				}
				if ds == nil || ds.Type != "influxdb" || ds.UID != "${DS_INFLUXDB}" {
					t.Errorf("panel %q %s: datasource %+v, want influxdb ${DS_INFLUXDB}", p.Title, tg.RefID, ds)
				}
				if !tg.RawQuery || strings.TrimSpace(tg.Query) == "" {
					t.Errorf("panel %q %s: not a raw InfluxQL query", p.Title, tg.RefID)
				}
				for _, want := range []string{`"host" =~ /^$host$/`, "$timeFilter"} {
					if !strings.Contains(tg.Query, want) {
						t.Errorf("panel %q %s: query lacks %s: %s", p.Title, tg.RefID, want, tg.Query)
					}
				}
				targets = append(targets, grafanaTarget{p.Title, tg.RefID, tg.Query})
			}
		}
	}
	walk(d.Panels)
	return targets, variables
}

var grafanaLeftover = regexp.MustCompile(`\$(\{|__|[A-Za-z])`)

// grafanaExpand substitutes Grafana's macros as Grafana would for the last
// hour, a 1 s interval and host = host.
func grafanaExpand(t *testing.T, q, host string) string {
	t.Helper()
	r := strings.NewReplacer(
		"$timeFilter", "time > now() - 1h",
		"$__timeFilter", "time > now() - 1h",
		"$__interval_ms", "1000",
		"$__interval", "1s",
		"$interval", "1s",
		"${host:regex}", regexp.QuoteMeta(host),
		"${host}", regexp.QuoteMeta(host),
		"$host", regexp.QuoteMeta(host),
	)
	out := r.Replace(q)
	if m := grafanaLeftover.FindString(out); m != "" {
		t.Errorf("query keeps an unsubstituted macro %q: %s", m, out)
	}
	return out
}

// influxQL runs q and returns the error text (query or statement) and the
// number of non-null values in its answer (time columns excluded).
func influxQL(t *testing.T, in *testbed.Influxd, db, q string) (errText string, values int) {
	t.Helper()
	resp, err := http.PostForm(in.URL+"/query", url.Values{"db": {db}, "q": {q}, "epoch": {"ns"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var r struct {
		Results []struct {
			Series []struct {
				Columns []string `json:"columns"`
				Values  [][]any  `json:"values"`
			} `json:"series"`
			Error string `json:"error"`
		} `json:"results"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body), 0
	}
	if r.Error != "" {
		return r.Error, 0
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body), 0
	}
	for _, res := range r.Results {
		if res.Error != "" {
			return res.Error, 0
		}
		for _, s := range res.Series {
			for _, row := range s.Values {
				for i, v := range row {
					if i < len(s.Columns) && s.Columns[i] != "time" && v != nil {
						values++
					}
				}
			}
		}
	}
	return "", values
}

// grafanaSamplePanels are the panels whose data `monagent run` cannot produce
// on a machine without the hardware, daemons or peers: no clock step happens
// on demand, no PHC, NTP server, chronyd, ptp4l, PTP master, GPIO line, PPS
// device, extts channel or HCA cluster is assumed. For them the test writes
// sample points of the documented schema (docs/schema.md; hca_model and
// hca_sync as agent/source_hca.go writes them), so their queries prove that the
// dashboard names the schema's measurements, tags and fields, not that the
// agent wrote them. Every other panel must show the agent's own data.
var grafanaSamplePanels = map[string]string{
	"Clock steps (clock_step)":                             "no clock is stepped during the test",
	"PHC offset (phc_offset)":                              "needs a PTP hardware clock",
	"PHC read window (phc_offset)":                         "needs a PTP hardware clock",
	"NTP probe offset (ntp_probe)":                         "needs an NTP server",
	"NTP probe delay and dispersion (ntp_probe)":           "needs an NTP server",
	"NTP server state (ntp_probe)":                         "needs an NTP server",
	"NTP probe traffic (ntp_probe)":                        "needs an NTP server",
	"chronyd tracking (chrony_tracking)":                   "needs chronyd",
	"chronyd sources (chrony_source)":                      "needs chronyd",
	"ptp4l offset from master (ptp4l_current)":             "needs ptp4l",
	"ptp4l port state (ptp4l_port)":                        "needs ptp4l",
	"PTP probe offset (ptp_probe)":                         "needs a PTP master",
	"PTP probe traffic and rejections (ptp_probe_stats)":   "needs a PTP master",
	"GPIO edges per interval (gpio_event)":                 "needs a GPIO line",
	"PPS edges per interval (pps_event)":                   "needs a PPS device",
	"PHC external timestamps per interval (extts_event)":   "needs a PHC with extts",
	"GPIO per-line losses (monagent_source source=gpio:…)": "needs a GPIO line",
	"PPS and extts losses (monagent_source)":               "needs a PPS device and a PHC with extts",
	"HCA model bound per rank (hca_model)":                 "needs an HCA cluster",
	"HCA model fit (hca_model)":                            "needs an HCA cluster",
	"HCA model drift (hca_model)":                          "needs an HCA cluster",
	"HCA sync rounds (hca_sync)":                           "needs an HCA cluster",
	"HCA sync messages and losses (hca_sync)":              "needs an HCA cluster",
	"Clock state (clock_state)":                            "needs a judged clock (an NTP server, chronyd)",
	"Clock error bound (clock_state)":                      "needs a judged clock (an NTP server, chronyd)",
}

// grafanaSamples is line protocol of the documented schema for the panels
// above, three points a second apart ending at end, host host.
func grafanaSamples(host string, end time.Time) string {
	var b strings.Builder
	for k := int64(1); k <= 3; k++ {
		ts := end.Add(time.Duration(k-3) * time.Second).UnixNano()
		for _, l := range []string{
			`clock_step,host=%[1]s,clock=realtime,ref=monotonic_raw step_ns=1500000i,offset_before_ns=1000i,offset_after_ns=1501000i,interval_ns=1000000000i,steps=%[2]di %[3]d`,
			`phc_offset,host=%[1]s,device=phc0,clock=realtime,clock_name=e1000e offset_ns=-37000000012i,delay_ns=1520i,phc_ns=%[3]di,sys_ns=%[3]di,samples=9i,method="extended",bracket_ns=0i %[3]d`,
			`ntp_probe,host=%[1]s,server=192.0.2.1:123,mode=interleaved,timestamps=software/software offset_ns=-12000i,delay_ns=80000i,dispersion_ns=20000i,server_processing_ns=15000i,mixed=false,delay_outlier=false,stratum=2i,leap=0i,poll=3i,precision=-24i,requests=%[2]di,replies=%[2]di,timeouts=0i,bytes_sent=%[2]d90i,bytes_received=%[2]d90i,bytes_per_s=23 %[3]d`,
			`chrony_tracking,host=%[1]s stratum=3i,leap_status=0i,system_time_ns=-2100i,last_offset_ns=-1800i,rms_offset_ns=4000i,freq_ppb=-1500,skew_ppb=30 %[3]d`,
			`chrony_source,host=%[1]s,source=192.0.2.1,state=sync,mode=server poll=6i,stratum=2i,reachability=255i,latest_meas_ns=-3100i,latest_meas_err_ns=90000i %[3]d`,
			`ptp4l_current,host=%[1]s offset_from_master_ns=-12i,mean_path_delay_ns=1800i,steps_removed=1i %[3]d`,
			`ptp4l_port,host=%[1]s,port=1 port_state="SLAVE",port_state_code=9i,log_sync_interval=0i %[3]d`,
			`ptp_probe,host=%[1]s,master=001122.fffe.334455-1,timestamps=hardware/hardware offset_ns=25i,path_delay_ns=1790i,delay_ns=1810i,seq=%[2]di,t1_ns=%[3]di,t2_ns=%[3]di,correction_ns=0i %[3]d`,
			`ptp_probe_stats,host=%[1]s,master=001122.fffe.334455-1 transport="udp4",bytes_sent=%[2]d180i,bytes_received=%[2]d186i,bytes_sent_per_s=180,bytes_received_per_s=186,delay_req_timeouts=0i,measurements=1i %[3]d`,
			`gpio_event,host=%[1]s,chip=gpiochip0,line=17,name=line17,edge=rising kernel_ns=%[2]d000000000i,clock="monotonic",seqno=%[2]di,line_seqno=%[2]di,uncertainty_ns=800i %[3]d`,
			`pps_event,host=%[1]s,device=/dev/pps0,name=pps0,edge=assert sequence=%[2]di,kernel_ns=%[3]di %[3]d`,
			`extts_event,host=%[1]s,phc=/dev/ptp0,channel=0,name=pps_in,edge=rising phc_ns=%[3]di,uncertainty_ns=120i %[3]d`,
			`monagent_source,host=%[1]s,source=gpio:gpiochip0 events=%[2]di,events_collected=%[2]di,kernel_lost=0i,ring_dropped=0i,read_errors=0i,line17_events=%[2]di,line17_lost=0i,line17_irqs=%[2]di,line17_merged=0i %[3]d`,
			`monagent_source,host=%[1]s,source=pps:pps0 events=%[2]di,events_collected=%[2]di,kernel_lost=0i,ring_dropped=0i,read_errors=0i,assert_events=%[2]di,assert_lost=0i,clear_events=0i,clear_lost=0i %[3]d`,
			`monagent_source,host=%[1]s,source=extts:/dev/ptp0 events=%[2]di,events_collected=%[2]di,kernel_lost=0i,ring_dropped=0i,read_errors=0i,missed_edges=0i,channel0_events=%[2]di %[3]d`,
			`hca_model,host=%[1]s,algorithm=hca3,rank=1 round=%[2]di,slope=0.0000002,intercept_ns=-4200i,origin_ns=%[3]di,slope_err=0.000000001,residual_ns=45.5,points=16i,floor_ns=100i,bound_ns=350i %[3]d`,
			`hca_sync,host=%[1]s,algorithm=hca3 round=%[2]di,nodes=2i,duration_ns=1200000i,messages=64i,exchanges=32i,lost=0i,rejected=0i,max_bound_ns=350i,models_undelivered=0i %[3]d`,
			`clock_state,host=%[1]s,clock=system,source=ntp:192.0.2.1:123 state="LOCKED",since_ns=%[3]di,offset_ns=-12000i,bound_ns=95000i,last_sample_ns=%[3]di,state_changes=1i %[3]d`,
		} {
			fmt.Fprintf(&b, l+"\n", host, k, ts)
		}
	}
	return b.String()
}

// TestGrafanaDashboardQueries runs every query of configs/grafana/monagent.json
// against a real InfluxDB 1.8 holding what `monagent run` (configs/local.yaml
// with a marker socket and an influx section) shipped through its spool, then
// again after writing documented-schema samples for the panels this machine
// cannot feed. It fails on any query error, on an empty panel fed by the
// agent, and on any empty panel at the end.
func TestGrafanaDashboardQueries(t *testing.T) {
	const db, host = "grafana", "grafana-test"
	if _, err := os.Stat(filepath.Join(testbed.CacheDir(), "influxd-"+testbed.InfluxdVersion, "influxd")); err != nil {
		if _, gerr := exec.LookPath("go"); gerr != nil {
			t.Skipf("cannot start influxd %s: not built in %s and no go command to build it", testbed.InfluxdVersion, testbed.CacheDir())
		}
		if testing.Short() {
			t.Skip("influxd is not built yet and -short is set: skipping rather than building it")
		}
	}
	targets, variables := grafanaDashboard(t, "../../configs/grafana/monagent.json")
	if t.Failed() {
		t.FailNow()
	}
	in := testbed.StartInfluxd(t, db)

	local, err := os.ReadFile("../../configs/local.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := string(local)
	for old, repl := range map[string]string{
		"output:\n  stdout: true\n":      "output:\n  stdout: false\n  file: out.lp\n",
		"self_metrics:\n  interval: 10s": "self_metrics:\n  interval: 1s",
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("configs/local.yaml no longer holds %q: adapt this test", old)
		}
		cfg = strings.Replace(cfg, old, repl, 1)
	}
	cfg += fmt.Sprintf(`
host: %s
paths:
  runtime_dir: %s
marker:
  enabled: true
  interval: 500ms
influx:
  enabled: true
  url: %s
  bucket: %s/autogen
  token_env: TEST_INFLUX_TOKEN
  batch_interval: 200ms
`, host, dir, in.URL, db)
	agent := startAgent(t, dir, writeConfig(t, dir, cfg), "--duration", "6s")

	// Markers, once the socket is there.
	sock := filepath.Join(dir, "marker.sock")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
			t.Fatalf("no marker socket at %s after 5 s\n%s", sock, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mc, err := marker.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		m := marker.Marker{Name: "grafana_test", HasValue: true, Value: float64(i)}
		if err := m.AddTag("phase", "run"); err != nil {
			t.Fatal(err)
		}
		if err := mc.Send(m); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond)
	}
	mc.Close()
	if err := agent.Wait(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
		t.Fatalf("monagent run: %v\n%s", err, log)
	}

	// Drain what the agent's last moments left in the spool, with a shipper
	// that adds nothing of its own.
	shipSpool(t, dir, host+"-shipper", "./data/spool", in.URL, db, 2*time.Second)
	log, _ := os.ReadFile(filepath.Join(dir, "agent.log"))
	summary := string(log)[strings.LastIndex(string(log), "spool ./data/spool:")+1:]
	if i := strings.IndexByte(summary, '\n'); i >= 0 {
		summary = summary[:i]
	}
	if !strings.Contains(summary, " 0 pending,") {
		t.Fatalf("the spool did not drain to influxd (%s):\n%s", summary, log)
	}
	// Every point the agent wrote is in influxd.
	raw, err := os.ReadFile(filepath.Join(dir, "out.lp"))
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		m, _ := lineKey(l)
		written[m]++
	}
	for _, m := range []string{"clock_offset", "timex", "marker", "monagent", "monagent_source", "monagent_spool", "monagent_influx"} {
		if written[m] == 0 {
			t.Errorf("monagent run wrote no %s", m)
		}
	}
	for m, n := range written {
		if got := pointsIn(t, in, db, fmt.Sprintf(`SELECT * FROM %q WHERE "host"='%s'`, m, host)); got != n {
			t.Errorf("%s: %d points written, %d in influxd", m, n, got)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// The host variable lists the agent's host.
	if e, n := influxQL(t, in, db, variables["host"]); e != "" || n == 0 {
		t.Errorf("host variable %q: error %q, %d values", variables["host"], e, n)
	} else if got := pointsIn(t, in, db, `SHOW TAG VALUES WITH KEY = "host" WHERE "host" = '`+host+`'`); got == 0 {
		t.Errorf("host variable does not list %s", host)
	}

	// Pass 1: the agent's own data.
	fromSamples := map[string]bool{}
	for _, tg := range targets {
		if _, ok := grafanaSamplePanels[tg.Panel]; ok {
			fromSamples[tg.Panel] = true
			continue
		}
		q := grafanaExpand(t, tg.Query, host)
		if e, n := influxQL(t, in, db, q); e != "" {
			t.Errorf("panel %q %s: %s\n  %s", tg.Panel, tg.RefID, e, q)
		} else if n == 0 {
			t.Errorf("panel %q %s: empty on the agent's own data\n  %s", tg.Panel, tg.RefID, q)
		} else {
			t.Logf("agent data   %4d values  %s / %s", n, tg.Panel, tg.RefID)
		}
	}
	for title := range grafanaSamplePanels {
		if !fromSamples[title] {
			t.Errorf("grafanaSamplePanels names %q, which the dashboard does not have", title)
		}
	}

	// Pass 2: samples of the documented schema for the rest.
	if st, body := in.Write(db+"/autogen", grafanaSamples(host, time.Now())); st != http.StatusNoContent {
		t.Fatalf("writing the schema samples: HTTP %d: %s", st, body)
	}
	panels := map[string]bool{}
	for _, tg := range targets {
		panels[tg.Panel] = true
		if !fromSamples[tg.Panel] {
			continue
		}
		q := grafanaExpand(t, tg.Query, host)
		if e, n := influxQL(t, in, db, q); e != "" {
			t.Errorf("panel %q %s: %s\n  %s", tg.Panel, tg.RefID, e, q)
		} else if n == 0 {
			t.Errorf("panel %q %s: empty on the schema samples\n  %s", tg.Panel, tg.RefID, q)
		} else {
			t.Logf("schema sample %4d values  %s / %s (%s)", n, tg.Panel, tg.RefID, grafanaSamplePanels[tg.Panel])
		}
	}
	names := make([]string, 0, len(panels))
	for p := range panels {
		names = append(names, p)
	}
	slices.Sort(names)
	t.Logf("%d panels, %d queries: %d panels on the agent's data, %d on schema samples", len(names), len(targets), len(names)-len(fromSamples), len(fromSamples))
}
