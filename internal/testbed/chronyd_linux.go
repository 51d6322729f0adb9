package testbed

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Chronyd is a chronyd started by a test in a namespace. It always runs with -x:
// it never touches the host's clock.
type Chronyd struct {
	Dir    string
	Socket string // command socket (chronyc -h Socket)
	d      daemon
	t      testing.TB
	host   *Host
	conf   string
}

// ChronydServerConf makes chronyd an NTP server of its own (free-running)
// clock at stratum 1, answering everyone on its namespace's link.
const ChronydServerConf = `local stratum 1
allow all
`

// ChronydClientConf makes chronyd a client of server polling every 2^poll s that
// logs every measurement; it serves no NTP itself. bind, when not empty, is the
// local address its requests come from (bindacqaddress).
//
// It runs at its best with software timestamps, as chrony's documentation
// sets a client up for accuracy on a LAN: xleave (interleaved mode: the
// server's T3 is the kernel transmit timestamp of its previous reply, not a
// user-space one taken before the send) with a short fixed poll (minpoll =
// maxpoll), kernel RX and TX timestamps (chronyd's default on Linux). Its
// measurements.log says per line which mode and stamps each exchange had
// (Measurement.Mode, TxStamp, RxStamp).
func ChronydClientConf(server string, poll int, bind string) string {
	c := fmt.Sprintf("server %s iburst minpoll %d maxpoll %d xleave\nport 0\nlog measurements\n", server, poll, poll)
	if bind != "" {
		c += "bindacqaddress " + bind + "\n"
	}
	return c
}

// ChronydMeasurerConf is ChronydClientConf with the source marked noselect:
// chronyd measures the server exactly as a client in interleaved mode does
// but never synchronises to it. With -x that matters: a chronyd that
// selects its source steers a clock of its own (the null driver's: tracking
// says "System time ... slow of NTP time") and cooks every local timestamp
// with it, so its measurements.log offsets are of that steered clock and
// average zero by its servo, whatever the path does. A noselect one logs
// offsets of the system clock itself: the measurement to compare a probe
// with.
func ChronydMeasurerConf(server string, poll int, bind string) string {
	return strings.Replace(ChronydClientConf(server, poll, bind), " xleave\n", " xleave noselect\n", 1)
}

// StartChronyd starts chronyd -x in host with conf plus its own pid file, command
// socket and log directory; it is stopped when the test ends.
func StartChronyd(t testing.TB, host *Host, conf string) *Chronyd {
	t.Helper()
	needPrograms(t, "Debian package chrony", "chronyd")
	dir := t.TempDir()
	// chronyd refuses a command socket in a directory others can enter.
	runDir := filepath.Join(dir, "run")
	if err := os.Mkdir(runDir, 0o700); err != nil {
		t.Fatal(err)
	}
	c := &Chronyd{Dir: dir, Socket: filepath.Join(runDir, "chronyd.sock"), t: t,
		d: daemon{name: "chronyd", log: filepath.Join(dir, "chronyd.log")}}
	full := conf + fmt.Sprintf("cmdport 0\nbindcmdaddress %s\npidfile %s\nlogdir %s\ndriftfile %s\n",
		c.Socket, filepath.Join(dir, "chronyd.pid"), dir, filepath.Join(dir, "drift"))
	path := filepath.Join(dir, "chrony.conf")
	writeFile(t, path, []byte(full))
	c.host, c.conf = host, path
	c.Start()
	t.Cleanup(c.Stop)
	return c
}

// Start (re)starts chronyd with the same configuration, socket and logs.
func (c *Chronyd) Start() {
	t := c.t
	t.Helper()
	// -x: never adjust the clock; -u root: no privilege drop, so the command
	// socket can live in the test's directory; -d: foreground, log to stderr.
	cmd := c.host.Command("chronyd", "-x", "-u", "root", "-d", "-f", c.conf)
	c.d.start(t, cmd, exists(c.Socket), 10*time.Second, 20*time.Millisecond, "chronyd made no command socket within 10 s")
}

// Stop stops chronyd.
func (c *Chronyd) Stop() {
	if !c.d.running() {
		return
	}
	c.d.stop(5 * time.Second)
	os.Remove(c.Socket)
}

// Chronyc runs chronyc against this chronyd's command socket.
func (c *Chronyd) Chronyc(args ...string) (string, error) {
	out, err := exec.Command("chronyc", append([]string{"-h", c.Socket}, args...)...).CombinedOutput()
	return string(out), err
}

// Measurement is one line of chronyd's measurements.log.
type Measurement struct {
	Time time.Time
	// OffsetNS is the local clock minus the source's, the sign of
	// monagent's offsets. The log's own column is RFC 5905's theta, the
	// source minus the local clock ("positive indicates that the local
	// clock is slow of the remote source", chrony.conf(5)): it is negated
	// here.
	OffsetNS int64
	DelayNS  int64
	// Tests is chronyd's column of its maxdelay, maxdelayratio,
	// maxdelaydevratio and sync-loop tests ("1111": all passed).
	Tests string
	// Mode is the NTP version and mode column: "4I" interleaved, "4B"
	// basic; empty where the log has no such column (chrony before 4.0).
	Mode string
	// TxStamp and RxStamp are where chronyd took its own transmit and
	// receive timestamps: "K" kernel, "D" daemon (user space), "H" hardware.
	TxStamp, RxStamp string
}

// Interleaved reports whether the exchange was made in interleaved mode.
func (m Measurement) Interleaved() bool { return strings.HasSuffix(m.Mode, "I") }

// Passed reports whether chronyd kept the sample (every test passed).
func (m Measurement) Passed() bool { return m.Tests == "1111" }

// Measurements reads measurements.log: every sample chronyd took that passed
// RFC 5905's tests 1 to 7, with its own delay tests in Tests.
func (c *Chronyd) Measurements() ([]Measurement, error) {
	f, err := os.Open(filepath.Join(c.Dir, "measurements.log"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Measurement
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Date Time IP L St 123 567 ABCD LP RP Score Offset Peer-del Peer-disp Root-del Root-disp Refid ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 14 || strings.HasPrefix(sc.Text(), "=") || fs[0] == "Date" {
			continue
		}
		ts, err := time.Parse("2006-01-02 15:04:05", fs[0]+" "+fs[1])
		if err != nil {
			continue
		}
		off, err1 := strconv.ParseFloat(fs[11], 64)
		del, err2 := strconv.ParseFloat(fs[12], 64)
		if err1 != nil || err2 != nil {
			return out, fmt.Errorf("measurements.log: %q", sc.Text())
		}
		m := Measurement{Time: ts, OffsetNS: -int64(math.Round(off * 1e9)), DelayNS: int64(math.Round(del * 1e9)), Tests: fs[7]}
		// ... Refid Mode TxTs RxTs (chrony 4): "4I K K".
		if len(fs) >= 20 {
			m.Mode, m.TxStamp, m.RxStamp = fs[17], fs[18], fs[19]
		}
		out = append(out, m)
	}
	return out, sc.Err()
}
