// Command costfloor is the least a Go program can do for the work the
// agent does each second with configs/local.yaml plus one NTP server (issue
// 37's cost test): on each second of CLOCK_MONOTONIC, read four clocks
// against MONOTONIC_RAW and the kernel's timex, make one NTP exchange over
// UDP (user-space stamps; waiting in Go's netpoller, or with -steps
// ntpblock in a blocking read as the agent's sockts does), write one line
// to stdout, append
// a record to a file and fsync it. One goroutine, no hand-offs, no
// encoding, no judging: what is left is what Go's runtime and the kernel
// charge for waking a process to do that I/O once a second.
// TestCostBesideNodeExporter runs it beside the agent and node_exporter, so
// the agent's cost can be read against what any Go program doing its work
// would cost. -steps leaves parts out, to see what each costs.
//
//	costfloor -server 10.0.0.1:123 -file /tmp/x/floor.dat [-steps clocks,ntp,stdout,fsync]
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	server := flag.String("server", "", "NTP server, host:port")
	file := flag.String("file", "", "file to append a record to and fsync, each second")
	steps := flag.String("steps", "clocks,ntp,stdout,fsync", "what to do each second: clocks, ntp (through Go's netpoller) or ntpblock (a blocking read), stdout, fsync")
	flag.Parse()
	has := func(s string) bool { return strings.Contains(*steps, s) }
	if err := run(*server, *file, has); err != nil {
		fmt.Fprintln(os.Stderr, "costfloor:", err)
		os.Exit(1)
	}
}

func run(server, file string, has func(string) bool) error {
	var c net.Conn
	fd := -1
	if has("ntpblock") {
		var err error
		if fd, err = blockingUDP(server); err != nil {
			return err
		}
	} else if has("ntp") {
		var err error
		if c, err = net.Dial("udp", server); err != nil {
			return err
		}
	}
	var f *os.File
	if has("fsync") {
		var err error
		if f, err = os.OpenFile(file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return err
		}
	}
	out := bufio.NewWriterSize(os.Stdout, 4096)
	rec := make([]byte, 500)
	req, resp := make([]byte, 48), make([]byte, 64)
	clocks := []int32{unix.CLOCK_REALTIME, unix.CLOCK_TAI, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME}
	for {
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return err
		}
		time.Sleep(time.Duration(1e9 - ts.Nano()%1e9))
		var sum int64
		if has("clocks") {
			for _, id := range clocks {
				for range 3 {
					var r, x unix.Timespec
					unix.ClockGettime(unix.CLOCK_MONOTONIC_RAW, &r)
					unix.ClockGettime(id, &x)
					sum += x.Nano() - r.Nano()
				}
			}
			var tx unix.Timex
			unix.Adjtimex(&tx)
		}
		var rtt int64
		if fd >= 0 {
			req[0] = 0x23
			binary.BigEndian.PutUint64(req[40:], uint64(time.Now().UnixNano()))
			t1 := time.Now()
			if _, err := unix.Write(fd, req); err == nil {
				if _, err := unix.Read(fd, resp); err == nil {
					rtt = time.Since(t1).Nanoseconds()
				}
			}
		}
		if c != nil {
			req[0] = 0x23 // version 4, client
			binary.BigEndian.PutUint64(req[40:], uint64(time.Now().UnixNano()))
			c.SetDeadline(time.Now().Add(500 * time.Millisecond))
			t1 := time.Now()
			if _, err := c.Write(req); err == nil {
				if _, err := c.Read(resp); err == nil {
					rtt = time.Since(t1).Nanoseconds()
				}
			}
		}
		// The cost test counts lines starting "ntp" as the agent's NTP records.
		fmt.Fprintf(out, "ntp_floor clocks=%di,rtt=%di %d\n", sum, rtt, time.Now().UnixNano())
		if has("stdout") {
			out.Flush()
		}
		if f != nil {
			f.Write(rec)
			f.Sync()
		}
	}
}

// blockingUDP is a UDP socket connected to server whose reads block in the
// kernel (SO_RCVTIMEO 500 ms), outside Go's netpoller.
func blockingUDP(server string) (int, error) {
	ap, err := netip.ParseAddrPort(server)
	if err != nil {
		return -1, err
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	tv := unix.Timeval{Usec: 500_000}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return -1, err
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		return -1, fmt.Errorf("connect %s: %w", server, err)
	}
	return fd, nil
}
