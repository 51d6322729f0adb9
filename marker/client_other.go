//go:build !unix

package marker

import (
	"fmt"
	"runtime"
)

var errOS = fmt.Errorf("marker client: needs a Unix system, not %s", runtime.GOOS)

func dial(path string) (int, error) { return -1, errOS }
func send(fd int, b []byte) error   { return errOS }
func full(err error) bool           { return false }
func closeFD(fd int) error          { return nil }
func monotonicNow() (int64, error)  { return 0, errOS }
