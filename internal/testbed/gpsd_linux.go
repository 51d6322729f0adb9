package testbed

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Gpsfake is Debian's gpsfake running gpsd on a loopback port, feeding it
// a log once (-1) through a pty. gpsd reads the pty only once a client
// watches, so the feed starts with the first WATCH; a second after the log
// is done (-W 1: gpsfake's "Test timed out", status 1) gpsfake stops gpsd
// and exits: the feed stops, the connection is closed.
type Gpsfake struct {
	Addr string // gpsd's address, 127.0.0.1:port
	Log  string // gpsfake's and gpsd's output
	d    daemon
}

// StartGpsfake writes log to a file and runs gpsfake -1 on it, a sentence
// every cycle; it is stopped when the test ends. It skips the test when
// gpsfake or gpsd is not installed.
func StartGpsfake(t testing.TB, log []byte, cycle time.Duration) *Gpsfake {
	t.Helper()
	return StartGpsfakeLogs(t, cycle, log)
}

// StartGpsfakeLogs is StartGpsfake with one receiver per log: gpsfake feeds
// each through a pty of its own (gpsd names each device by its pty), side
// by side, a sentence of each every cycle.
func StartGpsfakeLogs(t testing.TB, cycle time.Duration, logs ...[]byte) *Gpsfake {
	t.Helper()
	for _, p := range []string{"gpsfake", "gpsd"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed (Debian packages gpsd, gpsd-clients)", p)
			}
		}
	}
	dir := t.TempDir()
	var paths []string
	for i, log := range logs {
		paths = append(paths, filepath.Join(dir, "fix"+strconv.Itoa(i)+".nmea"))
		writeFile(t, paths[i], log)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	g := &Gpsfake{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Log: filepath.Join(dir, "gpsfake.log")}
	g.d = daemon{name: "gpsfake", log: g.Log}
	cmd := exec.Command("gpsfake", append([]string{"-1", "-q", "-W", "1", "-P", strconv.Itoa(port), "-c", strconv.FormatFloat(cycle.Seconds(), 'f', 3, 64)}, paths...)...)
	cmd.Env = append(os.Environ(), "PATH=/usr/sbin:/usr/bin:/sbin:/bin:"+os.Getenv("PATH"))
	g.d.start(t, cmd, func() bool {
		c, err := net.DialTimeout("tcp", g.Addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "gpsfake's gpsd did not listen within 20 s")
	t.Cleanup(func() { g.d.stop(5 * time.Second) })
	return g
}

// Exited is closed when gpsfake has exited (the log was fed).
func (g *Gpsfake) Exited() <-chan struct{} { return g.d.exited }

// Output is what gpsfake and gpsd wrote, for a failing test.
func (g *Gpsfake) Output() string { return g.d.output() }
