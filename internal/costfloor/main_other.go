//go:build !linux

package main

import (
	"fmt"
	"os"
	"runtime"
)

func main() {
	fmt.Fprintf(os.Stderr, "costfloor: measures Linux's clocks, sockets and fsync; not built for %s\n", runtime.GOOS)
	os.Exit(1)
}
