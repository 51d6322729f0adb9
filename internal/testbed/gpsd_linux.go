package testbed

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// NMEASentence is body ("GPRMC,...") as a sentence: $, the body, * and
// its checksum (the XOR of the body's bytes), CR LF.
func NMEASentence(body string) string {
	var x byte
	for i := 0; i < len(body); i++ {
		x ^= body[i]
	}
	return fmt.Sprintf("$%s*%02X\r\n", body, x)
}

// NMEA fix the log describes: 10 satellites in view, 8 used; 2 in view
// in an epoch without a fix.
const (
	NMEASeen      = 10
	NMEAUsed      = 8
	NMEASeenNoFix = 2
)

// NMEAFix is a receiver's log of epochs one second apart from start (UTC,
// whole seconds): the first noFix epochs without a fix (RMC V, GGA quality
// 0, GSA mode 1), then a 3D fix at 48°07.038'N 11°31.000'E, 545.4 m, from
// NMEAUsed of NMEASeen satellites. Each epoch is six sentences: RMC, GGA,
// GSA and three GSV (a no-fix epoch: four, one GSV).
func NMEAFix(start time.Time, epochs, noFix int) []byte {
	var b strings.Builder
	for i := range epochs {
		t := start.UTC().Add(time.Duration(i) * time.Second)
		hms, dmy := t.Format("150405")+".00", t.Format("020106")
		if i < noFix {
			b.WriteString(NMEASentence("GPRMC," + hms + ",V,,,,,,," + dmy + ",,,N"))
			b.WriteString(NMEASentence("GPGGA," + hms + ",,,,,0,00,99.9,,M,,M,,"))
			b.WriteString(NMEASentence("GPGSA,A,1,,,,,,,,,,,,,99.9,99.9,99.9"))
			b.WriteString(NMEASentence("GPGSV,1,1,02,04,45,100,20,05,30,200,"))
			continue
		}
		b.WriteString(NMEASentence("GPRMC," + hms + ",A,4807.038,N,01131.000,E,0.0,0.0," + dmy + ",,,A"))
		b.WriteString(NMEASentence("GPGGA," + hms + ",4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
		b.WriteString(NMEASentence("GPGSA,A,3,04,05,09,12,24,25,29,31,,,,,1.8,0.9,1.5"))
		b.WriteString(NMEASentence("GPGSV,3,1,10,04,45,100,40,05,30,200,38,09,60,050,42,12,20,300,35"))
		b.WriteString(NMEASentence("GPGSV,3,2,10,24,50,150,41,25,15,250,30,29,70,010,44,31,25,330,36"))
		b.WriteString(NMEASentence("GPGSV,3,3,10,02,05,090,,07,03,180,"))
	}
	return []byte(b.String())
}

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
	for _, p := range []string{"gpsfake", "gpsd"} {
		if _, err := exec.LookPath(p); err != nil {
			if _, err := os.Stat("/usr/sbin/" + p); err != nil {
				t.Skipf("%s is not installed (Debian packages gpsd, gpsd-clients)", p)
			}
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "fix.nmea")
	if err := os.WriteFile(path, log, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	g := &Gpsfake{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Log: filepath.Join(dir, "gpsfake.log")}
	g.d = daemon{name: "gpsfake", log: g.Log}
	cmd := exec.Command("gpsfake", "-1", "-q", "-W", "1", "-P", strconv.Itoa(port), "-c", strconv.FormatFloat(cycle.Seconds(), 'f', 3, 64), path)
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
func (g *Gpsfake) Output() string {
	b, _ := os.ReadFile(g.Log)
	return string(b)
}
