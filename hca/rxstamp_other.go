//go:build !linux

package hca

import "net"

// enableRxStamps: kernel receive timestamps are a Linux feature here.
func enableRxStamps(*net.UDPConn) bool { return false }
