//go:build linux

// Command guestinit is the init (PID 1) of the rig's QEMU guests: it mounts
// the kernel's file systems, loads the plan's modules, brings the network
// interfaces up, runs each test binary with its output on the console, writes
// one exit line per binary for the host, and restarts the machine (QEMU runs
// with -no-reboot, so it exits). It is built for the guest's architecture by
// the rig; see package guest.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/internal/testbed/guest"
)

func main() {
	if err := run(); err != nil {
		say("error %v", err)
	}
	say("done")
	unix.Sync()
	// QEMU runs with -no-reboot: a restart ends it on every machine type.
	unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
	select {}
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stdout, guest.Marker+format+"\n", args...)
}

func run() error {
	for _, m := range []struct{ src, dst, fstype string }{
		{"proc", "/proc", "proc"},
		{"sysfs", "/sys", "sysfs"},
		{"devtmpfs", "/dev", "devtmpfs"},
		{"tmpfs", "/tmp", "tmpfs"},
		{"tmpfs", "/run", "tmpfs"},
	} {
		if err := os.MkdirAll(m.dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.src, m.dst, m.fstype, 0, ""); err != nil {
			return fmt.Errorf("mount %s: %w", m.dst, err)
		}
	}
	plan, err := guest.ReadPlan()
	if err != nil {
		return err
	}
	for _, m := range plan.Modules {
		if err := loadModule(m, plan.Params[m]); err != nil {
			return err
		}
	}
	if plan.ConfigFS {
		if err := unix.Mount("configfs", "/sys/kernel/config", "configfs", 0, ""); err != nil {
			return fmt.Errorf("mount configfs: %w", err)
		}
	}
	for _, ifname := range append([]string{"lo"}, plan.Interfaces...) {
		if err := linkUp(ifname); err != nil {
			return err
		}
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	say("kernel %s %s", unix.ByteSliceToString(uts.Release[:]), unix.ByteSliceToString(uts.Machine[:]))
	for _, r := range plan.Runs {
		say("run %s", r.Name)
		code := runOne(plan, r)
		say("exit %s %d", r.Name, code)
	}
	return nil
}

func loadModule(path, params string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), params, 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	return nil
}

func linkUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("interface %s: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing %s up: %w", name, err)
	}
	return nil
}

func runOne(plan *guest.Plan, r guest.Run) int {
	ctx := context.Background()
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, r.Bin, r.Args...)
	cmd.Dir = r.Dir
	cmd.Env = append([]string{"PATH=/bin:/usr/bin", "HOME=/tmp", "TMPDIR=/tmp"}, plan.Env...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	cmd.WaitDelay = 5 * time.Second
	// On timeout the whole process group goes, with any program the tests
	// started (gpiomon, say), which could otherwise hold a line.
	cmd.SysProcAttr = &unix.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return unix.Kill(-cmd.Process.Pid, unix.SIGKILL) }
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() >= 0:
		return ee.ExitCode()
	default:
		say("error %s: %s", r.Name, strings.ReplaceAll(err.Error(), "\n", " "))
		return 255
	}
}
