package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/monagent/monagent/gnss"
)

// TestGpsdErrorFloodCostsAFewLogLines runs the real agent against a gpsd
// on loopback that sends VERSION, then 60,000 ERROR lines as fast as the
// socket takes them, closes, and hangs on the agent's next connection
// (TCP open, nothing sent). Every ERROR is counted (gpsd_errors in the
// source's self-metrics reaches 60,000) and the log holds a few lines,
// not one per message (on main before the fix: one per message, 60,000
// and more); the hung connection is dialled again after gnss.read_timeout
// (read_timeouts ≥ 1).
func TestGpsdErrorFloodCostsAFewLogLines(t *testing.T) {
	const floods = 60_000
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted sync.WaitGroup
	accepted.Add(1)
	stop := make(chan struct{})
	defer close(stop)
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
				defer accepted.Done()
				defer c.Close()
				// Read the agent's WATCH: closing with it unread would reset
				// the connection and drop the ERROR lines not yet read.
				if _, err := io.ReadFull(c, make([]byte, len(gnss.Watch))); err != nil {
					t.Errorf("gpsd's read of WATCH: %v", err)
					return
				}
				io.WriteString(c, `{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}`+"\n")
				line := `{"class":"ERROR","message":"` + strings.Repeat("E", 200) + `"}` + "\n"
				chunk := strings.Repeat(line, 100)
				for range floods / 100 {
					if _, err := io.WriteString(c, chunk); err != nil {
						t.Errorf("gpsd's write: %v", err)
						return
					}
				}
			}()
		}
	}()
	dir := t.TempDir()
	cfg := writeConfig(t, dir, fmt.Sprintf(`host: flood
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
  read_timeout: 2s
`, filepath.Join(dir, "spool"), l.Addr()))
	cmd := command("run", "--config", cfg, "--duration", "60s")
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
	accepted.Wait()
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
