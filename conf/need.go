package conf

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// NeedItem is one part of what a configuration needs of a resource (its
// memory): the key that sets it, how many bytes, and what they hold.
type NeedItem struct {
	Key   string
	Bytes int64
	What  string
}

// Need is what a configuration needs at most, as parts. Sort puts the
// largest part first.
type Need []NeedItem

// Add counts a part; a part of no bytes is left out.
func (n *Need) Add(key string, bytes int64, what string) {
	if bytes > 0 {
		*n = append(*n, NeedItem{key, bytes, what})
	}
}

// Sort orders the parts largest first (equal parts as they were added).
func (n Need) Sort() {
	slices.SortStableFunc(n, func(a, b NeedItem) int { return cmp.Compare(b.Bytes, a.Bytes) })
}

// Total is the sum of the parts.
func (n Need) Total() int64 {
	var t int64
	for _, it := range n {
		t += it.Bytes
	}
	return t
}

// String is one line: the total and the four largest parts.
func (n Need) String() string {
	parts := make([]string, 0, 5)
	for i, it := range n {
		if i == 4 {
			parts = append(parts, fmt.Sprintf("%d more", len(n)-i))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", it.Key, MiB(it.Bytes), it.What))
	}
	return fmt.Sprintf("needs at most %s: %s", MiB(n.Total()), strings.Join(parts, ", "))
}

// MiB writes a size in mebibytes, to a tenth.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
