package agent

import (
	"regexp"
	"slices"
	"sort"

	"github.com/monagent/monagent/status"
)

// TagsConfig are the host's tags: where the board stands (rack, room, …).
// With any set, every series on /metrics carries them and the label host
// (the agent's host tag) as labels of its own, so that a Prometheus scraping
// a fleet groups by rack and names the host (configs/prometheus/
// monagent-fleet.yml); without, /metrics is as it was and Prometheus's
// target labels can give the same. Records keep their host tag alone.
type TagsConfig map[string]string

func (t *TagsConfig) defaults() { *t = nil }

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

func (t *TagsConfig) check(p *problems) {
	for _, k := range t.keys() {
		v := (*t)[k]
		switch {
		case !labelName.MatchString(k) || len(k) >= 2 && k[:2] == "__":
			p.Add("tags."+k, "not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)")
		case slices.Contains(reservedLabels, k) || slices.Contains(status.LabelNames(), k):
			p.Add("tags."+k, "is a label monagent or Prometheus sets itself (%s and the metrics' own labels, docs/schema.md)", "host, job, instance")
		case v == "":
			p.Add("tags."+k, "empty: give a value or leave the tag out")
		}
	}
}

// reservedLabels are labels a tag may not take: the agent's host, and
// Prometheus's target labels.
var reservedLabels = []string{"host", "job", "instance"}

// keys are the tags' names, sorted.
func (t TagsConfig) keys() []string {
	k := make([]string, 0, len(t))
	for n := range t {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// labels are the constant labels of every /metrics series: none without
// tags, else host and the tags.
func (t TagsConfig) labels(host string) map[string]string {
	if len(t) == 0 {
		return nil
	}
	l := map[string]string{"host": host}
	for k, v := range t {
		l[k] = v
	}
	return l
}

var tagsSection = section{key: "tags", of: func(c *Config) sectionConfig { return &c.Tags }}
