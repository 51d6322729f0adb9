// Package spooltest helps the tests of code that uses a spool. It is for
// tests only.
package spooltest

import (
	"os"
	"testing"
)

// FileState is what tells whether a file changed.
type FileState struct {
	Size, ModTimeNS int64
}

// Files is every file of dir with its size and modification time: compare
// two to tell whether something wrote to the directory.
func Files(tb testing.TB, dir string) map[string]FileState {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	m := map[string]FileState{}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			tb.Fatal(err)
		}
		m[e.Name()] = FileState{fi.Size(), fi.ModTime().UnixNano()}
	}
	return m
}
