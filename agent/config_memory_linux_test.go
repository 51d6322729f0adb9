package agent

import (
	"reflect"
	"testing"
)

// The memory config check states holds each ring's events at their real
// sizes: run on amd64 and on 32-bit ARM (qemu-arm-static) alike. The list is
// the table's: every memory use a section's entry states.
func TestEventSizesWithinTheirBudget(t *testing.T) {
	n := 0
	for _, s := range sections() {
		for _, u := range s.memory {
			n++
			if size := u.size(); size > uintptr(u.bytes) {
				t.Errorf("%s %s: %d bytes, the memory check counts %d", s.key, u.what, size, u.bytes)
			}
		}
	}
	if n < 9 {
		t.Errorf("the table states %d memory uses, want the 9 of gpio, pps, gnss, extts, marker (2), sensors, hca, ptp", n)
	}
}

// A section that builds sources and whose configuration has a ring (a Ring
// field at any depth) states its memory in its entry.
func TestEverySourceWithARingStatesItsMemory(t *testing.T) {
	for _, s := range sections() {
		var c Config
		typ := reflect.TypeOf(s.of(&c)).Elem()
		if len(s.sources) > 0 && hasRing(typ, map[reflect.Type]bool{}) && len(s.memory) == 0 {
			t.Errorf("section %s has a ring but its entry states no memory (section.memory)", s.key)
		}
		if len(s.sources) == 0 && len(s.memory) > 0 {
			t.Errorf("section %s builds no source but states a source's memory", s.key)
		}
	}
}

// hasRing says whether a type holds a field named Ring, in itself, its
// structs or its lists' elements.
func hasRing(t reflect.Type, seen map[reflect.Type]bool) bool {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return false
	}
	seen[t] = true
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Name == "Ring" || hasRing(f.Type, seen) {
			return true
		}
	}
	return false
}
