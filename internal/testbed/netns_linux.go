package testbed

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Host is a network namespace this test created.
type Host struct {
	Name string
	Addr netip.Addr // its address on the link
	If   string     // its veth interface
}

var nsSeq atomic.Int32

// RequireRoot skips the test, saying why, when it cannot create namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces (CI runs as root)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip command")
	}
}

// NewLink creates two hosts (network namespaces) joined by a veth pair,
// 10.233.0.1/24 and 10.233.0.2/24, with loopback up in each. Both are removed
// when the test ends. The addresses exist only inside these namespaces.
func NewLink(t testing.TB) (a, b *Host) {
	t.Helper()
	RequireRoot(t)
	n := nsSeq.Add(1)
	prefix := fmt.Sprintf("mona%d-%d", os.Getpid()%100000, n)
	a = &Host{Name: prefix + "a", Addr: netip.MustParseAddr("10.233.0.1"), If: "veth0"}
	b = &Host{Name: prefix + "b", Addr: netip.MustParseAddr("10.233.0.2"), If: "veth1"}
	for _, h := range []*Host{a, b} {
		ip(t, "netns", "add", h.Name)
		name := h.Name
		t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		ip(t, "-n", h.Name, "link", "set", "lo", "up")
	}
	ip(t, "link", "add", prefix+"x", "netns", a.Name, "type", "veth", "peer", "name", prefix+"y", "netns", b.Name)
	ip(t, "-n", a.Name, "link", "set", prefix+"x", "name", a.If)
	ip(t, "-n", b.Name, "link", "set", prefix+"y", "name", b.If)
	for _, h := range []*Host{a, b} {
		ip(t, "-n", h.Name, "addr", "add", h.Addr.String()+"/24", "dev", h.If)
		ip(t, "-n", h.Name, "link", "set", h.If, "up")
	}
	return a, b
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// Command returns a command that runs inside the host's namespace; the zero
// Host (Local) is this machine's own namespace, its loopback.
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	if h.Name == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
}

// Local is this machine's own network namespace: peers started in it listen
// on its loopback (127.0.0.1).
var Local = &Host{Addr: netip.MustParseAddr("127.0.0.1"), If: "lo"}

// Do runs f on an OS thread inside the host's namespace. Sockets f creates stay
// in the namespace after the thread returns to its own.
func (h *Host) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return err
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + h.Name)
	if err != nil {
		return err
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", h.Name, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the wrong namespace: do not hand it back.
		runtime.Goexit()
	}
	return ferr
}

// NewBridge creates n hosts (namespaces) plugged into a bridge that lives in a
// namespace of its own, like machines on a switch: host i has 10.233.0.(i+1)/24
// on interface eth0. Everything is removed when the test ends.
func NewBridge(t testing.TB, n int) []*Host {
	t.Helper()
	RequireRoot(t)
	prefix := fmt.Sprintf("monb%d-%d", os.Getpid()%100000, nsSeq.Add(1))
	sw := prefix + "sw"
	ip(t, "netns", "add", sw)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", sw).Run() })
	ip(t, "-n", sw, "link", "add", "br0", "type", "bridge")
	ip(t, "-n", sw, "link", "set", "br0", "up")
	hosts := make([]*Host, n)
	for i := range hosts {
		h := &Host{Name: fmt.Sprintf("%sh%d", prefix, i), Addr: netip.AddrFrom4([4]byte{10, 233, 0, byte(i + 1)}), If: "eth0"}
		ip(t, "netns", "add", h.Name)
		name := h.Name
		t.Cleanup(func() { exec.Command("ip", "netns", "del", name).Run() })
		ip(t, "-n", h.Name, "link", "set", "lo", "up")
		port := fmt.Sprintf("p%d", i)
		ip(t, "link", "add", prefix+port, "netns", sw, "type", "veth", "peer", "name", prefix+"e", "netns", h.Name)
		ip(t, "-n", sw, "link", "set", prefix+port, "name", port)
		ip(t, "-n", sw, "link", "set", port, "master", "br0")
		ip(t, "-n", sw, "link", "set", port, "up")
		ip(t, "-n", h.Name, "link", "set", prefix+"e", "name", h.If)
		ip(t, "-n", h.Name, "addr", "add", h.Addr.String()+"/24", "dev", h.If)
		ip(t, "-n", h.Name, "link", "set", h.If, "up")
		hosts[i] = h
	}
	return hosts
}

// AddAddr adds another address (/24) to the host's link interface, e.g. to give
// a second client on the same host an address of its own.
func (h *Host) AddAddr(t testing.TB, a netip.Addr) {
	t.Helper()
	ip(t, "-n", h.Name, "addr", "add", a.String()+"/24", "dev", h.If)
}
