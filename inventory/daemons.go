package inventory

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// SocketProbe says whether a daemon's control socket is there and answers.
type SocketProbe struct {
	Daemon    string `json:"daemon"`
	Address   string `json:"address"`
	Present   bool   `json:"present"`
	Reachable bool   `json:"reachable"`
	Detail    string `json:"detail,omitempty"`
}

// probeDaemons checks chronyd's socket (and its command port when chronyUDP
// is set) and ptp4l's under run.
func probeDaemons(ctx context.Context, run, chronyUDP string) []SocketProbe {
	out := []SocketProbe{probeUnixgram(ctx, "chronyd", filepath.Join(run, "chrony", "chronyd.sock"))}
	if chronyUDP != "" {
		out = append(out, probeUDP(ctx, "chronyd", chronyUDP))
	}
	return append(out, probeUnixgram(ctx, "ptp4l", filepath.Join(run, "ptp4l")))
}

func probeUnixgram(ctx context.Context, daemon, path string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: path}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		sp.Detail = "absent: " + errText(err)
		return sp
	case fi.Mode()&fs.ModeSocket == 0:
		sp.Detail = "exists but is not a socket"
		return sp
	}
	sp.Present = true
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "unixgram", path)
	if err != nil {
		sp.Detail = "does not answer: " + errText(err)
		return sp
	}
	c.Close()
	sp.Reachable = true
	return sp
}

// probeUDP checks a loopback UDP port by sending nothing and asking the kernel
// whether anything listens (a connected UDP socket reports ECONNREFUSED on read
// after an ICMP port unreachable).
func probeUDP(ctx context.Context, daemon, addr string) SocketProbe {
	sp := SocketProbe{Daemon: daemon, Address: "udp://" + addr}
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		sp.Detail = "absent: " + errText(err)
		return sp
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(200 * time.Millisecond))
	c.Write([]byte{0}) // a one-byte datagram: chronyd drops it as malformed
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, syscall.ECONNREFUSED) {
		sp.Detail = "absent: nothing listens"
		return sp
	}
	sp.Present, sp.Reachable = true, true
	return sp
}

func (inv *Inventory) writeDaemons(pf func(string, ...any)) {
	pf("\nTime daemons:\n")
	for _, d := range inv.Daemons {
		state := "reachable"
		if !d.Reachable {
			state = "not reachable"
		}
		pf("  %-8s %-32s %s", d.Daemon, d.Address, state)
		if d.Detail != "" {
			pf(" (%s)", d.Detail)
		}
		pf("\n")
	}
}
