package agent

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// Sizes that pass the type check but no board can hold are refused, naming
// the key and the line: a ring beyond MaxRing, and a configuration whose
// buffers together exceed memory.limit (before: marker.ring: 4294967296
// passed, then run died out of memory, a crash loop under systemd).
func TestConfigRefusesWhatTheBoardCannotHold(t *testing.T) {
	for _, tc := range []struct{ yaml, key, want string }{
		// (on 32-bit ARM the number does not fit an int: the decoder says so)
		{"marker:\n  enabled: true\n  ring: 4294967296\n", "marker.ring", map[bool]string{true: "more than the largest ring, 1048576", false: "out of range"}[strconv.IntSize == 64]},
		{"marker:\n  enabled: true\n  ring: 262144\n", "marker.ring", "more than memory.limit 128.0 MiB"},
		{"gpio:\n  enabled: true\n  chips:\n    - chip: gpiochip0\n      lines: [{line: 1}]\n      ring: 2097152\n", "gpio.chips[0].ring", "more than the largest ring"},
		{"pps:\n  enabled: true\n  devices:\n    - {device: /dev/pps0, ring: 2097152}\n", "pps.devices[0].ring", "more than the largest ring"},
		{"extts:\n  enabled: true\n  ring: 2097152\n", "extts.ring", "more than the largest ring"},
		{"memory:\n  queue_bytes: 200000000\n", "memory.queue_bytes", "more than memory.limit"},
		{"memory:\n  limit: 1000000\n", "memory.limit", "less than the runtime alone needs"},
		{"memory:\n  queue_bytes: 1000\n", "memory.queue_bytes", "less than 1 MiB"},
	} {
		_, err := Parse("board.yaml", []byte(tc.yaml))
		var ps Problems
		if !errors.As(err, &ps) {
			t.Fatalf("%q: accepted (%v)", tc.yaml, err)
		}
		found := false
		for _, p := range ps {
			if p.Key == tc.key && strings.Contains(p.Reason, tc.want) && p.Line > 0 && p.File == "board.yaml" {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: want %s: ...%s... with its line, got:\n%v", tc.yaml, tc.key, tc.want, err)
		}
	}
	if _, err := Parse("ok.yaml", []byte("marker:\n  enabled: true\n  ring: 65536\nmemory:\n  limit: 268435456\n")); err != nil {
		t.Fatalf("a large ring within a raised limit: %v", err)
	}
}

// The need counts every ring and queue the configuration enables, each at
// its key, and the shipped example configurations fit the default limit.
func TestMemoryNeedCountsEveryBuffer(t *testing.T) {
	c, err := Parse("x.yaml", []byte("output:\n  stdout: true\n  file: /tmp/x.lp\nmarker:\n  enabled: true\n  ring: 4096\nextts:\n  enabled: true\n  channels: [{channel: 0}]\n  ring: 8192\n"))
	if err != nil {
		t.Fatal(err)
	}
	need := c.MemoryNeed()
	byKey := map[string]int64{}
	for _, it := range need {
		byKey[it.Key] = it.Bytes
	}
	want := map[string]int64{
		"marker.ring": 4096 * markerEventBytes, "extts.ring": 8192 * exttsEventBytes,
		"output.stdout": 3 * c.Memory.OutputQueueBytes, "output.file": 3 * c.Memory.OutputQueueBytes,
		"memory.queue_bytes": c.Memory.QueueBytes, "spool.buffer_bytes": c.Spool.Options().MemoryBytes(), "runtime": baseMemory,
		"http.max_connections": 32 * (64 + 2*(4+4)) << 10, // 32 connections of 64 KiB and twice 4 KiB of headers and 4 KiB of slack
	}
	for k, v := range want {
		if byKey[k] != v {
			t.Errorf("%s: %d bytes, want %d (%v)", k, byKey[k], v, need)
		}
	}
	for i := 1; i < len(need); i++ {
		if need[i].Bytes > need[i-1].Bytes {
			t.Fatalf("not largest first: %v", need)
		}
	}
	if !strings.HasPrefix(need.String(), "needs at most ") {
		t.Fatalf("String: %s", need)
	}
}
