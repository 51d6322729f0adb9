package ntp

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestChronyClientSocketInGivenDir: the monitor's client socket is bound in
// the directory it is given (the agent's runtime directory), writable by
// chronyd, and removed again on close or when connecting fails.
func TestChronyClientSocketInGivenDir(t *testing.T) {
	srv, _ := testbed.NewLink(t)
	c := testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	dir := t.TempDir()
	m := NewChrony(c.Socket, dir, time.Second)
	if _, err := m.Tracking(t.Context()); err != nil {
		t.Fatal(err)
	}
	local := m.LocalSocket()
	if filepath.Dir(local) != dir {
		t.Fatalf("client socket %q is not in %s", local, dir)
	}
	fi, err := os.Stat(local)
	if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o666 {
		t.Fatalf("client socket %v %v: want a socket of mode 0666", fi, err)
	}
	m.Close()
	if _, err := os.Stat(local); !os.IsNotExist(err) {
		t.Fatalf("client socket left after Close: %v", err)
	}
	bad := NewChrony(filepath.Join(dir, "no-chronyd.sock"), dir, 100*time.Millisecond)
	if _, err := bad.Tracking(t.Context()); err == nil {
		t.Fatal("tracking answered by nobody")
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a failed connect left %v in %s", left[0].Name(), dir)
	}
	if _, err := NewChrony(c.Socket, "", time.Second).Tracking(t.Context()); err == nil {
		t.Fatal("a monitor without a directory bound a socket somewhere")
	}
}

// TestChronydAsItsOwnUserAnswersIntoRuntimeDir runs chronyd as it runs on a
// board, dropping root for its own user, and checks that it can answer into a
// runtime directory like systemd's RuntimeDirectory= (mode 0755) and not into
// one only root can enter (as a PrivateTmp /tmp is to chronyd).
func TestChronydAsItsOwnUserAnswersIntoRuntimeDir(t *testing.T) {
	testbed.RequireRoot(t)
	if _, err := exec.LookPath("chronyd"); err != nil {
		t.Skip("chronyd is not installed (Debian package chrony)")
	}
	u, err := user.Lookup("_chrony")
	if err != nil {
		t.Skip("no _chrony user to run chronyd as")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	srv, _ := testbed.NewLink(t)
	base := t.TempDir()
	// Every directory on the way must be enterable by chronyd's user.
	for d := base; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	state := filepath.Join(base, "chrony")
	sockDir := filepath.Join(base, "chronyrun")
	for _, d := range []string{state, sockDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		os.Chown(d, uid, gid)
	}
	sock := filepath.Join(sockDir, "chronyd.sock")
	conf := filepath.Join(state, "chrony.conf")
	os.WriteFile(conf, []byte(fmt.Sprintf("local stratum 1\nport 0\ncmdport 0\nbindcmdaddress %s\npidfile %s\nlogdir %s\ndriftfile %s\n",
		sock, filepath.Join(state, "chronyd.pid"), state, filepath.Join(state, "drift"))), 0o644)
	cmd := srv.Command("chronyd", "-x", "-u", "_chrony", "-d", "-f", conf)
	logf, _ := os.Create(filepath.Join(base, "chronyd.log"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait(); logf.Close() })
	for i := 0; ; i++ {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if i == 200 {
			b, _ := os.ReadFile(filepath.Join(base, "chronyd.log"))
			t.Fatalf("chronyd made no command socket:\n%s", b)
		}
		time.Sleep(25 * time.Millisecond)
	}
	for _, c := range []struct {
		mode os.FileMode
		ok   bool
	}{{0o755, true}, {0o700, false}} {
		run := filepath.Join(base, fmt.Sprintf("run-%o", c.mode))
		if err := os.Mkdir(run, c.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(run, c.mode)
		m := NewChrony(sock, run, 300*time.Millisecond)
		_, err := m.Tracking(t.Context())
		m.Close()
		if (err == nil) != c.ok {
			t.Errorf("runtime dir mode %o: tracking error %v, want answered %v", c.mode, err, c.ok)
		}
	}
}
