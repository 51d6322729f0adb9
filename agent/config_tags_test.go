package agent

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// Host tags are Prometheus label names other than the labels monagent or
// Prometheus set, with a value; each bad one is a problem naming its key.
func TestTagsChecked(t *testing.T) {
	for _, tc := range []struct {
		yaml, key string
	}{
		{"tags: {rack: r1, room: a}", ""},
		{"tags: {rack-no: r1}", "tags.rack-no"},
		{"tags: {__rack: r1}", "tags.__rack"},
		{"tags: {host: b1}", "tags.host"},
		{"tags: {instance: b1}", "tags.instance"},
		{"tags: {server: x}", "tags.server"},
		{"tags: {clock: x}", "tags.clock"},
		{"tags: {rack: ''}", "tags.rack"},
	} {
		_, err := Parse("x.yaml", []byte(tc.yaml+"\nphc: {enabled: false}\n"))
		switch {
		case tc.key == "" && err != nil:
			t.Errorf("%s: %v", tc.yaml, err)
		case tc.key != "" && (err == nil || !strings.Contains(err.Error(), tc.key)):
			t.Errorf("%s: %v, want a problem at %s", tc.yaml, err, tc.key)
		}
	}
}

// With host tags every series on /metrics carries them and host; without,
// none does.
func TestTagsLabelEverySeries(t *testing.T) {
	for _, tags := range []TagsConfig{nil, {"rack": "r1", "room": "a"}} {
		cfg := Default()
		cfg.Tags = tags
		a := bare(cfg, nil, nil, "boarda")
		a.latest.Update(nil)
		mfs, err := a.registry().Gather()
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mf := range mfs {
			for _, m := range mf.Metric {
				got := map[string]string{}
				for _, l := range m.Label {
					got[l.GetName()] = l.GetValue()
				}
				n++
				if tags == nil && (got["rack"] != "" || got["host"] != "") {
					t.Errorf("%s carries %v without host tags", mf.GetName(), got)
				}
				if tags != nil && (got["rack"] != "r1" || got["room"] != "a" || got["host"] != "boarda") {
					t.Errorf("%s: labels %v, want host boarda, rack r1, room a", mf.GetName(), got)
				}
			}
		}
		if n < 10 {
			t.Errorf("only %d series", n)
		}
		if !has(mfs, "monagent_build_info") {
			t.Error("no monagent_build_info")
		}
	}
}

func has(mfs []*dto.MetricFamily, name string) bool {
	for _, mf := range mfs {
		if mf.GetName() == name {
			return true
		}
	}
	return false
}
