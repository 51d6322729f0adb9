package agent

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/notify"
	"github.com/monagent/monagent/record"
)

// Issue 33 item 2: user info in a webhook's URL is refused as in
// influx.url, in either form of the entry; the problem names the key and
// its line, the host at most (never the password, the path or the query),
// and how to send a token instead.
func TestWebhookURLWithCredentialsIsRefused(t *testing.T) {
	const pass, path, query = "S3cretPass", "/services/PATHSECRET", "token=TOPSECRET"
	for _, c := range []struct{ name, yaml, want string }{
		{"short form", "notify:\n  webhooks: [\"http://alice:" + pass + "@hooks.example" + path + "?" + query + "\"]\n",
			"x.yaml:2: notify.webhooks[0]: the URL for hooks.example:80 holds credentials (user:password@)"},
		{"long form", "notify:\n  webhooks:\n    - http://hooks.example/ok\n    - url: https://alice:" + pass + "@hooks.example" + path + "?" + query + "\n      token_env: HOOK_TOKEN\n",
			"x.yaml:4: notify.webhooks[1].url: the URL for hooks.example:443 holds credentials (user:password@)"},
		{"user alone", "notify:\n  webhooks: [\"https://alice@hooks.example:8443" + path + "\"]\n",
			"x.yaml:2: notify.webhooks[0]: the URL for hooks.example:8443 holds credentials (user:password@)"},
		{"not a URL", "notify:\n  webhooks: [\"ftp://alice:" + pass + "@hooks.example" + path + "\"]\n",
			`x.yaml:2: notify.webhooks[0]: not an http:// or https:// URL (scheme "ftp")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(c.yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", c.yaml)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.want) || strings.Contains(msg, pass) || strings.Contains(msg, "SECRET") || strings.Contains(msg, "alice") {
				t.Fatalf("%s\nwant it to start %s, without the password, user, path or query", msg, c.want)
			}
			if strings.Contains(msg, "holds credentials") && (!strings.Contains(msg, "token_file") || !strings.Contains(msg, "token_env")) {
				t.Fatalf("%s: does not point to token_file / token_env", msg)
			}
		})
	}
}

// A webhooks list takes URLs (as before) and entries with a token side by
// side; what is wrong in an entry is named at its key.
func TestWebhookEntries(t *testing.T) {
	cfg, err := Parse("x.yaml", []byte("notify:\n  webhooks:\n    - https://hooks.example/a?token=x\n    - url: http://127.0.0.1:9/b\n      header: X-Api-Key\n      token_file: /etc/monagent/hook.token\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []WebhookConfig{{URL: "https://hooks.example/a?token=x"}, {URL: "http://127.0.0.1:9/b", Header: "X-Api-Key", TokenFile: "/etc/monagent/hook.token"}}
	if fmt.Sprint(cfg.Notify.Webhooks) != fmt.Sprint(want) {
		t.Fatalf("webhooks %+v, want %+v", cfg.Notify.Webhooks, want)
	}
	for _, c := range []struct{ entry, want string }{
		{"{url: http://h/x, token_file: /f, token_env: E}", "x.yaml:3: notify.webhooks[0].token_env: give token_file or token_env, not both"},
		{"{url: http://h/x, header: X-Key}", "x.yaml:3: notify.webhooks[0].header: sends nothing without token_file or token_env"},
		{"{url: http://h/x, header: \"X Key\", token_env: E}", `x.yaml:3: notify.webhooks[0].header: "X Key" is not a header name`},
		{"{url: http://h/x, header: content-type, token_env: E}", "x.yaml:3: notify.webhooks[0].header: Content-Type is set by the agent"},
		{"{token_env: E}", "x.yaml:3: notify.webhooks[0].url: no URL"},
		{"{url: http://h/x, token: abc}", "x.yaml:3: notify.webhooks[0].token: unknown key (known here: url, header, token_file, token_env)"},
		{"12", `x.yaml:3: notify.webhooks[0]: want a string, got int "12" (quote it)`},
	} {
		_, err := Parse("x.yaml", []byte("notify:\n  webhooks:\n    - "+c.entry+"\n"))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s", c.entry, err, c.want)
		}
	}
}

// A webhook's token comes from its file or variable and is sent in its
// header; one that cannot be read or is empty stops the agent from starting
// (Preflight), naming the key and never the token.
func TestWebhookTokenIsSentInItsHeader(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Clone() }))
	defer srv.Close()
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "hook.token")
	if err := os.WriteFile(tokFile, []byte("Bearer file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONAGENT_TEST_HOOK_TOKEN", "env-token")
	cfg, err := Parse("x.yaml", []byte(fmt.Sprintf("notify:\n  webhooks:\n    - {url: %s/a, token_file: %s}\n    - {url: %s/b, header: X-Api-Key, token_env: MONAGENT_TEST_HOOK_TOKEN}\n",
		srv.URL, tokFile, srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Preflight(); err != nil {
		t.Fatal(err)
	}
	g := judging.New(judging.Options{Log: slog.New(slog.DiscardHandler)})
	if err := g.Webhooks(cfg.Notify.Sender); err != nil {
		t.Fatal(err)
	}
	g.Notifier().Run(t.Context())
	g.Notifier().Send(eventForTest())
	auth, key := map[string]bool{}, map[string]bool{}
	for range 2 {
		select {
		case h := <-got:
			auth[h.Get("Authorization")], key[h.Get("X-Api-Key")] = true, true
		case <-time.After(10 * time.Second):
			t.Fatal("the receivers got nothing")
		}
	}
	g.Notifier().Close(time.Second)
	if !auth["Bearer file-token"] || !key["env-token"] {
		t.Errorf("headers: Authorization %v, X-Api-Key %v", auth, key)
	}

	t.Setenv("MONAGENT_TEST_HOOK_TOKEN", "")
	if err := os.WriteFile(tokFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err = cfg.Preflight()
	if err == nil || !strings.Contains(err.Error(), "x.yaml:3: notify.webhooks[0].token_file: "+tokFile+" is empty") ||
		!strings.Contains(err.Error(), "x.yaml:4: notify.webhooks[1].token_env: $MONAGENT_TEST_HOOK_TOKEN is empty or unset") {
		t.Errorf("preflight: %v", err)
	}
}

// Issue 33 item 2: the monagent_notify records (shipped to InfluxDB, and
// the labels on /metrics) and the log name a receiver by index and host:
// before, the record's url tag was the whole URL, secret and all.
func TestWebhookRecordsAndLogsNameIndexAndHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // refused: every attempt fails
	var lg syncBuffer
	g := judging.New(judging.Options{Host: "boarda", Log: slog.New(slog.NewTextHandler(&lg, nil))})
	var n NotifyConfig
	n.Defaults()
	n.Webhooks = []WebhookConfig{{URL: "https://localhost/services/PATHSECRET?token=TOPSECRET"}, {URL: "http://" + addr + "/hook/PATHSECRET?token=TOPSECRET"}}
	n.Timeout = time.Second
	if err := g.Webhooks(n.Sender); err != nil {
		t.Fatal(err)
	}
	g.Notifier().Run(t.Context())
	g.Notifier().Send(eventForTest())
	deadline := time.Now().Add(10 * time.Second)
	for g.Notifier().Stats()[1].Retries == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	b := &collect.Batch{Host: "boarda"}
	g.Records(b, 1_795_000_000_000_000_000)
	var e record.Encoder
	lp, _, err := e.Append(nil, b.Records)
	if err != nil {
		t.Fatal(err)
	}
	g.Notifier().Close(0)
	text := string(lp) + lg.String()
	t.Log(text)
	if strings.Contains(text, "SECRET") || strings.Contains(text, "/hook") || strings.Contains(text, "/services") {
		t.Errorf("a URL's path or query in the records or the log:\n%s", text)
	}
	if !strings.Contains(string(lp), "monagent_notify,host=boarda,receiver=0,receiver_host=localhost:443 ") ||
		!strings.Contains(string(lp), "monagent_notify,host=boarda,receiver=1,receiver_host="+addr+" ") {
		t.Errorf("records:\n%s", lp)
	}
	if !strings.Contains(lg.String(), `msg="webhook 1 (`+addr+`) failed;`) || !strings.Contains(lg.String(), "connection refused") {
		t.Errorf("the log does not say receiver 1 fails:\n%s", lg.String())
	}
}

func eventForTest() notify.Event {
	return notify.Event{ID: notify.ID(1, 1), Source: "monagent://boarda", Type: "io.monagent.sync-state.v1", Time: time.Unix(0, 1).UTC(), Data: []byte(`{}`)}
}
