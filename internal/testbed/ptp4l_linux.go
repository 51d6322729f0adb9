package testbed

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Ptp4l is a ptp4l started by a test in a namespace. It always runs with
// free_running 1: it never adjusts a clock.
type Ptp4l struct {
	Dir    string
	Socket string // its management socket (uds_address)
	Log    string
	d      daemon
}

// Ptp4lOptions configure a ptp4l.
type Ptp4lOptions struct {
	Master    bool   // masterOnly 1 and priority1 10; else slaveOnly 1
	Transport string // UDPv4 (default) or L2
	Extra     string // more [global] lines
}

// StartPtp4l starts ptp4l on the host's link interface with software
// timestamping; it is stopped when the test ends.
func StartPtp4l(t testing.TB, host *Host, o Ptp4lOptions) *Ptp4l {
	t.Helper()
	needPrograms(t, "Debian package linuxptp", "ptp4l")
	dir := t.TempDir()
	p := &Ptp4l{Dir: dir, Socket: filepath.Join(dir, "ptp4l.sock"), Log: filepath.Join(dir, "ptp4l.log")}
	p.d = daemon{name: "ptp4l", log: p.Log}
	if o.Transport == "" {
		o.Transport = "UDPv4"
	}
	role := "slaveOnly 1\npriority1 128\n"
	if o.Master {
		role = "masterOnly 1\npriority1 10\n"
	}
	conf := fmt.Sprintf(`[global]
time_stamping software
free_running 1
uds_address %s
domainNumber 0
logSyncInterval 0
logAnnounceInterval 0
logMinDelayReqInterval 0
network_transport %s
summary_interval 0
%s%s
[%s]
`, p.Socket, o.Transport, role, o.Extra, host.If)
	path := filepath.Join(dir, "ptp4l.conf")
	writeFile(t, path, []byte(conf))
	cmd := host.Command("ptp4l", "-f", path, "-m", "-q")
	p.d.start(t, cmd, exists(p.Socket), 10*time.Second, 20*time.Millisecond, "ptp4l made no management socket within 10 s")
	t.Cleanup(p.Stop)
	return p
}

// Stop stops ptp4l.
func (p *Ptp4l) Stop() { p.d.stop(5 * time.Second) }

// Pmc runs pmc against this ptp4l's management socket and returns its output.
func (p *Ptp4l) Pmc(t testing.TB, command string) string {
	t.Helper()
	client := filepath.Join(p.Dir, fmt.Sprintf("pmc.%d", time.Now().UnixNano()))
	out, err := exec.Command("pmc", "-u", "-b", "0", "-d", "0", "-s", p.Socket, "-i", client, command).CombinedOutput()
	if err != nil {
		t.Fatalf("pmc %q: %v\n%s", command, err, out)
	}
	return string(out)
}

// LogText returns what ptp4l printed so far.
func (p *Ptp4l) LogText() string {
	return strings.TrimSpace(p.d.output())
}
