package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/monagent/monagent/status"
)

// statusServer serves doc (as JSON) at /status, or body as is when doc is nil.
func statusServer(t *testing.T, doc *status.Doc, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/status" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if doc != nil {
			json.NewEncoder(w).Encode(doc)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// `monagent status` as a monitoring plugin: 0 all LOCKED, 1 some not LOCKED
// (or none judged), 2 usage, 3 no monagent answered — a server that is not
// monagent (before: read as an agent with no clocks, exit 1 like a clock out
// of lock), an HTTP error, nothing listening. The URL as copied from a
// browser (…/status) is taken as is (before: …/status/status, HTTP 404).
func TestStatusExitCodes(t *testing.T) {
	now := time.Now().UnixNano()
	locked := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{{Clock: "system", Source: "ntp:x", State: "LOCKED", SinceNS: now - 1e9, ErrorBoundNS: 1000, LastSampleNS: now}}}
	holdover := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{{Clock: "system", Source: "ntp:x", State: "HOLDOVER", SinceNS: now - 1e9, ErrorBoundNS: 1000, LastSampleNS: now}}}
	none := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{}}
	// Cross-checked (issue 35): both references LOCKED on their own, the
	// clock disputed (both named); a majority naming a third a falseticker.
	yes, no := true, false
	ref := func(src string, agrees *bool) status.Clock {
		return status.Clock{Clock: "system", Source: src, State: "LOCKED", SinceNS: now - 1e9, ErrorBoundNS: 1000, LastSampleNS: now, Agrees: agrees}
	}
	disputed := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{ref("ntp:a", &no), ref("ntp:b", &no)},
		Combined: []status.Combined{{Clock: "system", State: "FREERUN", Vote: "disputed", ErrorBoundNS: -1, References: 2, Voting: 2, Falsetickers: []string{"ntp:a", "ntp:b"}}}}
	liar := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{ref("ntp:a", &yes), ref("ntp:b", &yes), ref("ntp:c", &no)},
		Combined: []status.Combined{{Clock: "system", State: "LOCKED", Vote: "agreed", ErrorBoundNS: 900, References: 3, Voting: 3, Agreeing: 2, Falsetickers: []string{"ntp:c"}}}}
	agreed := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{ref("ntp:a", &yes), ref("ntp:b", &yes)},
		Combined: []status.Combined{{Clock: "system", State: "LOCKED", Vote: "agreed", ErrorBoundNS: 900, References: 2, Voting: 2, Agreeing: 2}}}
	rank0 := &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{}, Reference: "HCA rank 0: the reference of the global timeline"}
	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	gone, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneURL := "http://" + gone.Addr().String()
	gone.Close()
	cases := []struct {
		name string
		args []string
		code int
		want string // in stdout+stderr
	}{
		{"all LOCKED", []string{"--url", statusServer(t, locked, "").URL}, 0, "LOCKED"},
		{"URL as copied", []string{"--url", statusServer(t, locked, "").URL + "/status"}, 0, "LOCKED"},
		{"URL with a slash", []string{"--url", statusServer(t, locked, "").URL + "/status/"}, 0, "LOCKED"},
		{"no scheme", []string{"--url", strings.TrimPrefix(statusServer(t, locked, "").URL, "http://")}, 0, "LOCKED"},
		{"HOLDOVER", []string{"--url", statusServer(t, holdover, "").URL}, 1, "1 of 1 judged clocks not LOCKED"},
		{"cross-checked, agreed", []string{"--url", statusServer(t, agreed, "").URL}, 0, "2 of 2"},
		{"disputed", []string{"--url", statusServer(t, disputed, "").URL}, 1, "0 of 2 judged clocks not LOCKED, 1 combined (cross-checked) not LOCKED, 2 references named (falseticker or disputed)"},
		{"a falseticker", []string{"--url", statusServer(t, liar, "").URL}, 1, "FALSETICKER"},
		{"none judged", []string{"--url", statusServer(t, none, "").URL}, 1, "no judged clocks"},
		{"HCA rank 0", []string{"--url", statusServer(t, rank0, "").URL}, 0, "HCA rank 0: the reference"},
		{"not monagent JSON", []string{"--url", statusServer(t, nil, `{"foo": 1}`).URL}, 3, "not a monagent /status document"},
		{"not JSON", []string{"--url", statusServer(t, nil, `<html>hello</html>`).URL}, 3, "not a monagent /status document"},
		{"other path", []string{"--url", statusServer(t, nil, "").URL + "/status/x"}, 2, "want none or /status"},
		{"HTTP 404", []string{"--url", notFound.URL}, 3, "HTTP 404"},
		{"nothing listening", []string{"--url", goneURL}, 3, "connection refused"},
		{"malformed URL", []string{"--url", "http://a b:1"}, 2, "not a URL"},
		{"other scheme", []string{"--url", "ftp://boarda:9469"}, 2, "want an http://"},
		{"no host", []string{"--url", "http://:9469"}, 2, "no host"},
		{"watch too fast", []string{"--url", goneURL, "--watch", "10ms"}, 2, "want at least 100ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, t.TempDir(), append([]string{"status"}, c.args...)...)
			if code != c.code || !strings.Contains(stdout+stderr, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s%s", code, c.code, c.want, stdout, stderr)
			}
		})
	}
}

// `status --watch` says at once when the agent stops answering, where the
// table was (before: the last table stayed on screen, as if all were well),
// and exits 3 when interrupted then.
func TestStatusWatchShowsAgentGone(t *testing.T) {
	now := time.Now().UnixNano()
	srv := statusServer(t, &status.Doc{Host: "boarda", TimeNS: now, Clocks: []status.Clock{{Clock: "system", Source: "ntp:x", State: "LOCKED", SinceNS: now, ErrorBoundNS: 1000, LastSampleNS: now}}}, "")
	cmd := command("status", "--url", srv.URL, "--watch", "200ms")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	wait := func(want string) {
		t.Helper()
		timeout := time.After(30 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("status ended before printing %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timeout:
				t.Fatalf("no %q within 30 s", want)
			}
		}
	}
	wait("LOCKED")
	srv.CloseClientConnections()
	srv.Close()
	wait("no answer at")
	cmd.Process.Signal(syscall.SIGINT)
	for range lines {
	}
	if err := cmd.Wait(); err == nil || cmd.ProcessState.ExitCode() != 3 {
		t.Errorf("interrupted while the agent is gone: %v, want exit 3", err)
	}
}
