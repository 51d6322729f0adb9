package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/gnss"
)

// floodingGpsd is a gpsd on loopback whose first connection gets VERSION,
// then ERROR lines (200 E's, as the hardening check sends) as fast as the
// socket takes them — n of them, or for d when n is 0 — and is closed;
// later connections are kept open with nothing sent (a hung gpsd) until the
// test ends. Sent counts the ERROR lines written; Done is closed when the
// first connection is.
type floodingGpsd struct {
	Addr string
	Sent atomic.Int64
	Done chan struct{}
}

func startFloodingGpsd(t testing.TB, n int, d time.Duration) *floodingGpsd {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &floodingGpsd{Addr: l.Addr().String(), Done: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); l.Close() })
	go func() {
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if i > 0 { // the agent dialled again: hang, TCP open
				go func() { <-stop; c.Close() }()
				continue
			}
			go func() {
				defer close(g.Done)
				defer c.Close()
				// Read the agent's WATCH: closing with it unread would reset
				// the connection and drop the ERROR lines not yet read.
				if _, err := io.ReadFull(c, make([]byte, len(gnss.Watch))); err != nil {
					t.Errorf("gpsd's read of WATCH: %v", err)
					return
				}
				io.WriteString(c, `{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}`+"\n")
				chunk := strings.Repeat(`{"class":"ERROR","message":"`+strings.Repeat("E", 200)+`"}`+"\n", 100)
				end := time.Now().Add(d)
				for n > 0 && g.Sent.Load() < int64(n) || n == 0 && time.Now().Before(end) {
					if _, err := io.WriteString(c, chunk); err != nil {
						return // the agent is gone
					}
					g.Sent.Add(100)
				}
			}()
		}
	}()
	return g
}

// gnssAgentConfig runs the gpsd source against addr, records on stdout.
func gnssAgentConfig(t testing.TB, dir, addr, more string) string {
	t.Helper()
	p := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`host: flood
clock:
  interval: 1s
phc:
  enabled: false
spool:
  dir: %s
output:
  stdout: true
self_metrics:
  interval: 500ms
gnss:
  enabled: true
  address: %s
%s`, filepath.Join(dir, "spool"), addr, more)), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGpsdErrorFloodCostsAFewLogLines runs the real agent against a gpsd
// on loopback that sends VERSION, then 60,000 ERROR lines as fast as the
// socket takes them, closes, and hangs on the agent's next connection
// (TCP open, nothing sent). Every ERROR is counted (gpsd_errors in the
// source's self-metrics reaches 60,000) and the log holds a few lines,
// not one per message (before the fix: one per message, 43,487 lines when
// the test ran on main); the hung connection is dialled again after
// gnss.read_timeout (read_timeouts ≥ 1).
func TestGpsdErrorFloodCostsAFewLogLines(t *testing.T) {
	const floods = 60_000
	g := startFloodingGpsd(t, floods, 0)
	dir := t.TempDir()
	cmd := command("run", "--config", gnssAgentConfig(t, dir, g.Addr, "  read_timeout: 2s\n"), "--duration", "60s")
	cmd.Dir = dir
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Read the records until the source's self-metrics count every ERROR
	// and a read timeout, then stop the agent (bounded by --duration).
	field := func(line, name string) uint64 {
		m := regexp.MustCompile(`[ ,]` + name + `=(\d+)[iu]?[ ,]`).FindStringSubmatch(line)
		if m == nil {
			return 0
		}
		n, _ := strconv.ParseUint(m[1], 10, 64)
		return n
	}
	var errorsSeen, timeouts uint64
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "monagent_source,") || !strings.Contains(line, "source=gnss:") {
			continue
		}
		errorsSeen, timeouts = field(line, "gpsd_errors"), field(line, "read_timeouts")
		if errorsSeen >= floods && timeouts >= 1 {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	go io.Copy(io.Discard, out)
	cmd.Wait()
	<-g.Done
	log := stderr.String()
	lines := strings.Count(log, "\n")
	t.Logf("%d log lines; gpsd_errors %d, read_timeouts %d", lines, errorsSeen, timeouts)
	if errorsSeen != floods {
		t.Errorf("gpsd_errors %d, want every one of the %d ERROR lines counted", errorsSeen, floods)
	}
	if timeouts < 1 {
		t.Error("the hung gpsd was not timed out (read_timeouts 0)")
	}
	if lines > 30 {
		t.Errorf("%d log lines for %d ERROR messages, want a few (one per change):\n%.3000s", lines, floods, log)
	}
}
