package testbed

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Ntpd is an ntpd (NTPsec) started by a test in a namespace. It can never
// change the machine's clock: it runs without CAP_SYS_TIME (removed from its
// capability bounding set, so its adjtimex writes fail with EPERM), with
// `disable ntp` and `disable kernel`, and without -g. The flags alone are not
// enough: NTPsec 1.2.2 still writes the kernel's PLL state and frequency at
// start (start_kern_loop, set_freq) with `disable kernel`.
type Ntpd struct {
	Dir  string
	Conf string
	Log  string // ntpd's logfile
	d    daemon
	host *Host
}

// NtpdClientConf makes ntpd a client of server polling every 2^poll s
// (NTPsec allows poll 0); mode 6 queries are answered from localhost only.
func NtpdClientConf(server string, poll int) string {
	return fmt.Sprintf(`server %s iburst minpoll %d maxpoll %d
restrict default kod limited nomodify noquery
restrict 127.0.0.1
restrict ::1
`, server, poll, poll)
}

// StartNtpd starts ntpd -n in host with conf plus `disable ntp`, `disable
// kernel` and its own driftfile, logfile and statsdir; it is stopped when the
// test ends. It is ready once it answers mode 6 on 127.0.0.1:123 (ntpq).
func StartNtpd(t testing.TB, host *Host, conf string) *Ntpd {
	t.Helper()
	needPrograms(t, "Debian packages ntpsec, util-linux", "ntpd", "ntpq", "setpriv")
	dir := t.TempDir()
	n := &Ntpd{Dir: dir, Conf: filepath.Join(dir, "ntp.conf"), Log: filepath.Join(dir, "ntpd.log"), host: host}
	n.d = daemon{name: "ntpd", log: filepath.Join(dir, "ntpd.out")}
	full := conf + fmt.Sprintf("disable ntp\ndisable kernel\ndriftfile %s\nlogfile %s\nstatsdir %s/\n",
		filepath.Join(dir, "ntp.drift"), n.Log, dir)
	writeFile(t, n.Conf, []byte(full))
	// setpriv drops CAP_SYS_TIME from the bounding and inheritable sets:
	// the kernel refuses ntpd any clock adjustment. -n: foreground; no -g;
	// -p: its own pid file.
	cmd := host.Command("setpriv", "--inh-caps=-sys_time", "--bounding-set=-sys_time",
		"ntpd", "-n", "-c", n.Conf, "-p", filepath.Join(dir, "ntpd.pid"))
	n.d.start(t, cmd, n.answers, 10*time.Second, 100*time.Millisecond, "ntpd answered no mode 6 query within 10 s")
	t.Cleanup(n.Stop)
	return n
}

// answers reports whether ntpd answers ntpq on localhost in its namespace.
func (n *Ntpd) answers() bool {
	out, err := n.Ntpq("-c", "rv 0 version")
	return err == nil && strings.Contains(out, "version=")
}

// Stop stops ntpd.
func (n *Ntpd) Stop() { n.d.stop(5 * time.Second) }

// Ntpq runs ntpq -n against 127.0.0.1 in ntpd's namespace with args before
// the host, e.g. Ntpq("-c", "rv").
func (n *Ntpd) Ntpq(args ...string) (string, error) {
	out, err := n.host.Command("ntpq", append(append([]string{"-n"}, args...), "127.0.0.1")...).CombinedOutput()
	return string(out), err
}

// LogText returns what ntpd logged so far.
func (n *Ntpd) LogText() string {
	return strings.TrimSpace(fileText(n.Log) + n.d.output())
}

// NtpdAddr is where ntpd answers mode 6 inside its namespace.
const NtpdAddr = "127.0.0.1:123"
