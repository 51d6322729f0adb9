package collect

import (
	"slices"
	"strings"

	"github.com/monagent/monagent/record"
)

// HostTags are the tags of one series' records in a few variants (e.g. per
// edge: rising, falling): the base tags and the variant's tag, then with the
// host tag and sorted by key (as Batch.Add would make them) once the host is
// known, shared by the records: the encoder leaves sorted tags as they are.
// Of does not allocate while the host stays the same. One goroutine only.
type HostTags struct {
	base [][]record.Tag
	host string
	tags [][]record.Tag
}

// NewHostTags returns the tags of base with key set to each of values, the
// variants Of's index picks.
func NewHostTags(base []record.Tag, key string, values ...string) HostTags {
	t := HostTags{base: make([][]record.Tag, len(values)), tags: make([][]record.Tag, len(values))}
	for i, v := range values {
		t.base[i] = append(slices.Clip(base), record.Tag{Key: key, Value: v})
	}
	return t
}

// NewFixedHostTags returns the tags of base alone, one variant: Of(host, 0).
func NewFixedHostTags(base []record.Tag) HostTags {
	return HostTags{base: [][]record.Tag{slices.Clip(base)}, tags: make([][]record.Tag, 1)}
}

// Of is the tags of variant i of a record shipped by host.
func (t *HostTags) Of(host string, i int) []record.Tag {
	if t.host != host || t.tags[i] == nil {
		for j, base := range t.base {
			t.tags[j] = append([]record.Tag{{Key: "host", Value: host}}, base...)
			slices.SortFunc(t.tags[j], func(a, b record.Tag) int { return strings.Compare(a.Key, b.Key) })
		}
		t.host = host
	}
	return t.tags[i]
}
