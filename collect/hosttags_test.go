package collect_test

import (
	"slices"
	"testing"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/record"
)

// Each variant's tags are the base, its own tag and the host's, sorted by
// key as Batch.Add and the encoder would make them, and follow a new host.
func TestHostTags(t *testing.T) {
	tags := collect.NewHostTags([]record.Tag{{Key: "line", Value: "17"}, {Key: "chip", Value: "gpiochip0"}}, "edge", "rising", "falling")
	for _, tc := range []struct {
		host string
		i    int
		want []record.Tag
	}{
		{"a", 0, []record.Tag{{Key: "chip", Value: "gpiochip0"}, {Key: "edge", Value: "rising"}, {Key: "host", Value: "a"}, {Key: "line", Value: "17"}}},
		{"a", 1, []record.Tag{{Key: "chip", Value: "gpiochip0"}, {Key: "edge", Value: "falling"}, {Key: "host", Value: "a"}, {Key: "line", Value: "17"}}},
		{"b", 1, []record.Tag{{Key: "chip", Value: "gpiochip0"}, {Key: "edge", Value: "falling"}, {Key: "host", Value: "b"}, {Key: "line", Value: "17"}}},
		{"b", 0, []record.Tag{{Key: "chip", Value: "gpiochip0"}, {Key: "edge", Value: "rising"}, {Key: "host", Value: "b"}, {Key: "line", Value: "17"}}},
	} {
		if got := tags.Of(tc.host, tc.i); !slices.Equal(got, tc.want) {
			t.Fatalf("host %s variant %d: %v, want %v", tc.host, tc.i, got, tc.want)
		}
	}
}

// The records of a series share its tags: Of does not allocate while the
// host stays the same.
func TestHostTagsDoNotAllocate(t *testing.T) {
	tags := collect.NewHostTags([]record.Tag{{Key: "device", Value: "/dev/pps0"}}, "edge", "assert", "clear")
	tags.Of("h", 0)
	if n := testing.AllocsPerRun(100, func() { tags.Of("h", 0); tags.Of("h", 1) }); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
}
