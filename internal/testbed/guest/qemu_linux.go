package guest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Machine is how QEMU boots one guest architecture.
type Machine struct {
	Arch    string   // Go's name: arm or amd64
	QEMU    string   // the qemu-system binary
	Args    []string // machine, CPU, memory and devices
	Console string   // the serial console's device in the guest
}

// nicArgs give both machines an e1000e NIC (its driver registers /dev/ptp0)
// on QEMU's user-mode network. The empty romfile is needed because Debian's
// QEMU lacks e1000e's option ROM.
var nicArgs = []string{"-device", "e1000e,netdev=n0,romfile=", "-netdev", "user,id=n0,restrict=on"}

// ARM is QEMU's virt board with a Cortex-A15, 512 MB like the BeagleBone, and
// the NIC. highmem=off keeps the PCIe host's ECAM where a 32-bit kernel finds
// it.
var ARM = Machine{
	Arch:    "arm",
	QEMU:    "qemu-system-arm",
	Args:    append([]string{"-M", "virt,highmem=off", "-cpu", "cortex-a15", "-m", "512", "-smp", "1"}, nicArgs...),
	Console: "ttyAMA0",
}

// AMD64 is a q35 PC with the same NIC. TCG: KVM hangs on this kind of machine.
var AMD64 = Machine{
	Arch:    "amd64",
	QEMU:    "qemu-system-x86_64",
	Args:    append([]string{"-M", "q35", "-cpu", "max", "-m", "1024", "-smp", "2"}, nicArgs...),
	Console: "ttyS0",
}

// Available says why QEMU cannot run this machine here, or nil.
func (m Machine) Available() error {
	if _, err := exec.LookPath(m.QEMU); err != nil {
		return fmt.Errorf("%w: %s (Debian package qemu-system-%s)", errNoQEMU, m.QEMU, map[string]string{"arm": "arm", "amd64": "x86"}[m.Arch])
	}
	return nil
}

// Boot is one run of a guest.
type Boot struct {
	Machine Machine
	Kernel  string // vmlinuz
	Initrd  string // the cpio archive
	DTB     string // a device tree to boot with instead of QEMU's own (ARM)
	Append  string // more kernel command line
	Timeout time.Duration
	Out     io.Writer // every console line, prefixed "[guest ARCH] "
	// Request answers a "request" line from the guest (through the monitor).
	Request func(req string, mon *Monitor) error
}

// Result is what the guest reported.
type Result struct {
	Kernel string         // the "kernel" line: release and machine
	Exits  map[string]int // run name -> exit status
	Order  []string       // runs in the order they started
	Errors []string       // the init's "error" lines
	Done   bool           // the init finished its plan
	Tail   []string       // the last console lines, for a failure's message
}

// Run boots the guest, relays its console and waits until QEMU exits or the
// timeout passes (then QEMU is killed and an error returned).
func (b *Boot) Run(ctx context.Context) (*Result, error) {
	if err := b.Machine.Available(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, b.Timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "monagent-guest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	monPath := filepath.Join(dir, "monitor")
	cmdline := "console=" + b.Machine.Console + " quiet panic=-1 " + b.Append
	args := append([]string{}, b.Machine.Args...)
	args = append(args, "-display", "none", "-no-reboot", "-no-user-config", "-nodefaults",
		"-serial", "stdio", "-monitor", "unix:"+monPath+",server,nowait",
		"-kernel", b.Kernel, "-initrd", b.Initrd, "-append", strings.TrimSpace(cmdline))
	if b.DTB != "" {
		args = append(args, "-dtb", b.DTB)
	}
	cmd := exec.CommandContext(ctx, b.Machine.QEMU, args...)
	// QEMU dies with the test binary, even one killed by go test's timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe() // never written: QEMU must not read the test's stdin
	if err != nil {
		return nil, err
	}
	defer stdin.Close()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("guest %s: starting %s: %w", b.Machine.Arch, b.Machine.QEMU, err)
	}
	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait(); pw.Close() }()

	res := &Result{Exits: map[string]int{}}
	mon := &Monitor{path: monPath}
	defer mon.Close()
	prefix := "[guest " + b.Machine.Arch + "] "
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var reqErr error
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if b.Out != nil {
			fmt.Fprintln(b.Out, prefix+line)
		}
		res.Tail = append(res.Tail, line)
		if len(res.Tail) > 40 {
			res.Tail = res.Tail[1:]
		}
		i := strings.Index(line, Marker)
		if i < 0 {
			continue
		}
		verb, rest, _ := strings.Cut(line[i+len(Marker):], " ")
		switch verb {
		case "kernel":
			res.Kernel = rest
		case "run":
			res.Order = append(res.Order, rest)
		case "exit":
			name, code, _ := strings.Cut(rest, " ")
			n, err := strconv.Atoi(code)
			if err != nil {
				n = -1
			}
			res.Exits[name] = n
		case "error":
			res.Errors = append(res.Errors, rest)
		case "done":
			res.Done = true
		case "request":
			if b.Request == nil {
				reqErr = errors.Join(reqErr, fmt.Errorf("guest asked %q and nobody answers", rest))
				continue
			}
			if err := b.Request(rest, mon); err != nil {
				reqErr = errors.Join(reqErr, fmt.Errorf("answering %q: %w", rest, err))
			}
		}
	}
	if err := sc.Err(); err != nil {
		// A line too long to scan: keep QEMU's console flowing to its end.
		reqErr = errors.Join(reqErr, fmt.Errorf("guest %s: reading the console: %w", b.Machine.Arch, err))
		io.Copy(io.Discard, pr)
	}
	err = <-waitErr
	switch {
	case ctx.Err() != nil:
		return res, fmt.Errorf("guest %s: no end within %v (killed)", b.Machine.Arch, b.Timeout)
	case err != nil && !res.Done:
		return res, fmt.Errorf("guest %s: %s: %w", b.Machine.Arch, b.Machine.QEMU, err)
	}
	return res, reqErr
}

// Monitor is QEMU's human monitor on a Unix socket.
type Monitor struct {
	path string
	mu   sync.Mutex
	conn net.Conn
}

// Command sends one monitor command, such as "system_powerdown".
func (m *Monitor) Command(cmd string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn == nil {
		c, err := net.Dial("unix", m.path)
		if err != nil {
			return fmt.Errorf("QEMU monitor: %w", err)
		}
		m.conn = c
		go io.Copy(io.Discard, c) // the banner, prompts and echoes
	}
	_, err := io.WriteString(m.conn, cmd+"\n")
	return err
}

// Close closes the monitor connection.
func (m *Monitor) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.conn != nil {
		m.conn.Close()
	}
}

// ARMDeviceTree writes QEMU's own device tree of the ARM machine without its
// gpio-keys node, so that the PL061's line 3 (QEMU's power button) is free
// for a GPIO request: each system_powerdown then gives a rising edge and,
// 100 ms later, a falling one. It needs dtc (Debian package
// device-tree-compiler).
func ARMDeviceTree(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "virt-no-gpio-keys.dtb")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if _, err := exec.LookPath("dtc"); err != nil {
		return "", fmt.Errorf("guest: dtc is not installed (Debian package device-tree-compiler): %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	raw := filepath.Join(dir, "virt.dtb")
	m := ARM
	args := append([]string{}, m.Args...)
	for i, a := range args {
		if a == "virt,highmem=off" {
			args[i] = a + ",dumpdtb=" + raw
		}
	}
	args = append(args, "-display", "none", "-nodefaults")
	if b, err := exec.CommandContext(ctx, m.QEMU, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("guest: dumping the virt board's device tree: %w\n%s", err, tail(b, 800))
	}
	dts, err := exec.CommandContext(ctx, "dtc", "-q", "-I", "dtb", "-O", "dts", raw).Output()
	if err != nil {
		return "", fmt.Errorf("guest: dtc: %w", err)
	}
	edited, err := dropNode(string(dts), "gpio-keys")
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "dtc", "-q", "-I", "dts", "-O", "dtb", "-o", out+".tmp", "-")
	cmd.Stdin = strings.NewReader(edited)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("guest: dtc: %w\n%s", err, tail(b, 800))
	}
	return out, os.Rename(out+".tmp", out)
}

// dropNode removes the device-tree source node "name {...};".
func dropNode(dts, name string) (string, error) {
	i := strings.Index(dts, "\t"+name+" {")
	if i < 0 {
		return "", fmt.Errorf("guest: the device tree has no %s node", name)
	}
	depth := 0
	for j := i; j < len(dts); j++ {
		switch dts[j] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				end := j + 1
				if end < len(dts) && dts[end] == ';' {
					end++
				}
				return dts[:i] + dts[end:], nil
			}
		}
	}
	return "", fmt.Errorf("guest: the device tree's %s node does not end", name)
}
