package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// fleetSamplePanels are the drill-down panels whose data no agent of the
// fleet test has (no PHC, ptp4l, GNSS receiver, PPS device or sensor on
// this machine): they are checked on the sample board, whose records
// follow the documented schema through the agent's own conversion.
var fleetSamplePanels = map[string]string{
	"PHC offset to the system clock (phc_offset)":                 "needs a PTP hardware clock",
	"ptp4l offset and path delay (ptp4l_current)":                 "needs ptp4l",
	"ptp4l port state and grandmaster (ptp4l_port, ptp4l_parent)": "needs ptp4l",
	"GNSS: fix, satellites, TOFF (gnss)":                          "needs a GNSS receiver and gpsd",
	"PPS phase (pps_event)":                                       "needs a PPS device",
	"Sensors (sensor)":                                            "needs hwmon sensors",
}

// fleetDashboard reads configs/grafana/monagent-fleet.json: every panel
// query (title → expressions), the annotation's, and the template
// variables' queries, checking the shape Grafana needs: PromQL on the
// templated Prometheus datasource.
func fleetDashboard(t *testing.T) (panels map[string][]string, annotations []string, variables map[string]string) {
	t.Helper()
	raw, err := os.ReadFile("../../configs/grafana/monagent-fleet.json")
	if err != nil {
		t.Fatal(err)
	}
	type ds struct{ Type, UID string }
	var d struct {
		SchemaVersion int
		Templating    struct {
			List []struct {
				Name, Type string
				Query      any
				Datasource *ds
			}
		}
		Annotations struct {
			List []struct {
				Expr       string
				Datasource *ds
			}
		}
		Panels []struct {
			Type, Title string
			Datasource  *ds
			Targets     []struct {
				RefID      string `json:"refId"`
				Expr       string
				Datasource *ds
			}
		}
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("monagent-fleet.json: %v", err)
	}
	if d.SchemaVersion < 36 || d.SchemaVersion > 39 {
		t.Errorf("schemaVersion %d, want Grafana 9/10's (36–39)", d.SchemaVersion)
	}
	promDS := func(x *ds) bool { return x != nil && x.Type == "prometheus" && x.UID == "${DS_PROMETHEUS}" }
	variables = map[string]string{}
	for _, v := range d.Templating.List {
		switch q := v.Query.(type) {
		case string:
			variables[v.Name] = q
		case map[string]any:
			variables[v.Name], _ = q["query"].(string)
		}
		if v.Name == "DS_PROMETHEUS" && (v.Type != "datasource" || variables[v.Name] != "prometheus") {
			t.Errorf("variable DS_PROMETHEUS: type %q query %q, want a datasource variable of type prometheus", v.Type, variables[v.Name])
		}
		if v.Type == "query" && !promDS(v.Datasource) {
			t.Errorf("variable %s: datasource %+v, want prometheus ${DS_PROMETHEUS}", v.Name, v.Datasource)
		}
	}
	for _, a := range d.Annotations.List {
		if !promDS(a.Datasource) {
			t.Errorf("annotation: datasource %+v", a.Datasource)
		}
		annotations = append(annotations, a.Expr)
	}
	panels = map[string][]string{}
	for _, p := range d.Panels {
		if p.Type == "row" {
			continue
		}
		if _, dup := panels[p.Title]; dup {
			t.Errorf("two panels titled %q", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			x := tg.Datasource
			if x == nil {
				x = p.Datasource
			}
			if !promDS(x) || strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q %s: datasource %+v, expr %q: want PromQL on prometheus ${DS_PROMETHEUS}", p.Title, tg.RefID, x, tg.Expr)
			}
			panels[p.Title] = append(panels[p.Title], tg.Expr)
		}
	}
	return panels, annotations, variables
}

var labelValues = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)

// fleetExpand substitutes Grafana's variables and macros as Grafana would
// with job monagent, every rack (All) and board, a 2 s interval.
func fleetExpand(t *testing.T, q, board string) string {
	t.Helper()
	out := strings.NewReplacer("$__rate_interval", "8s", "$__interval", "2s", "$job", "monagent", "$rack", ".*", "$board", board).Replace(q)
	if m := grafanaLeftover.FindString(out); m != "" {
		t.Errorf("query keeps an unsubstituted macro %q: %s", m, out)
	}
	return out
}

// fleetDashboardQueries runs every query of the fleet dashboard against the
// fleet test's Prometheus at end: the variables list the fleet (job, racks
// a–d, the boards), every fleet panel and the one-board panels of d1 (a
// host of the lying rack, which also reads its chronyd) have data, and the
// panels no agent here can feed have the sample board's.
func fleetDashboardQueries(t *testing.T, prom *testbed.Prometheus, end time.Time) {
	panels, annotations, variables := fleetDashboard(t)
	for name, want := range map[string][]string{"job": {"monagent"}, "rack": {"a", "b", "c", "d"}, "board": {"a1", "d1", "d3", "sample-board"}} {
		m := labelValues.FindStringSubmatch(variables[name])
		if m == nil {
			t.Errorf("variable %s: %q is not label_values(metric, label)", name, variables[name])
			continue
		}
		res, err := prom.QueryAll("group by ("+m[2]+") ("+fleetExpand(t, m[1], "")+")", end)
		if err != nil {
			t.Errorf("variable %s: %v", name, err)
			continue
		}
		got := map[string]bool{}
		for _, s := range res {
			got[s.Labels[m[2]]] = true
		}
		for _, w := range want {
			if !got[w] {
				t.Errorf("variable %s (%s) does not list %s: %v", name, variables[name], w, got)
			}
		}
	}
	check := func(what, q string) {
		res, err := prom.QueryAll(q, end)
		switch {
		case err != nil:
			t.Errorf("%s: %v", what, err)
		case len(res) == 0:
			t.Errorf("%s: no data\n  %s", what, q)
		default:
			t.Logf("%3d series  %s", len(res), what)
		}
	}
	for _, a := range annotations {
		check("annotation", fleetExpand(t, a, "d1"))
	}
	for title, exprs := range panels {
		board := "d1"
		if _, ok := fleetSamplePanels[title]; ok {
			board = "sample-board"
		}
		for _, e := range exprs {
			check(title+" ($board="+board+")", fleetExpand(t, e, board))
		}
	}
	for title := range fleetSamplePanels {
		if _, ok := panels[title]; !ok {
			t.Errorf("fleetSamplePanels names %q, which the dashboard does not have", title)
		}
	}
}
