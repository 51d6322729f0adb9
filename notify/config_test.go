package notify

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/monagent/monagent/conf"
)

// problemsOf is every problem Check finds in n, one a line.
func problemsOf(n *Config) string {
	var p conf.List
	n.Check(&p)
	var b strings.Builder
	for _, ke := range p.Problems {
		b.WriteString(ke.Error() + "\n")
	}
	return b.String()
}

// A webhooks entry is a URL alone or a mapping; the mapping keeps the
// defaults of what it leaves out.
func TestWebhookShortAndLongForm(t *testing.T) {
	var n Config
	n.Defaults()
	src := "webhooks:\n  - https://hooks.example/a?token=x\n  - {url: http://127.0.0.1:9/b, header: X-Api-Key, token_env: HOOK}\n"
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	want := []Webhook{{URL: "https://hooks.example/a?token=x"}, {URL: "http://127.0.0.1:9/b", Header: "X-Api-Key", TokenEnv: "HOOK"}}
	if len(n.Webhooks) != 2 || n.Webhooks[0] != want[0] || n.Webhooks[1] != want[1] || n.Queue != 256 {
		t.Fatalf("decoded %+v, want webhooks %+v and the default queue 256", n, want)
	}
	if got := problemsOf(&n); got != "" {
		t.Errorf("problems in a good section:\n%s", got)
	}
}

// Check names each problem at its key, the short form's at the entry, the
// long form's at its url, and never the URL's user, password, path or query.
func TestConfigCheck(t *testing.T) {
	n := Config{Webhooks: []Webhook{
		{URL: "https://alice:S3cret@hooks.example/PATHSECRET"},
		{URL: "http://h/x", TokenFile: "/f", TokenEnv: "E"},
		{URL: "http://h/x", Header: "X-Key"},
		{URL: "http://h/x", Header: "X Key", TokenEnv: "E"},
		{URL: "http://h/x", Header: "host", TokenEnv: "E"},
		{TokenEnv: "E"},
	}}
	got := problemsOf(&n)
	for _, want := range []string{
		"notify.webhooks[0]: the URL for hooks.example:443 holds credentials (user:password@): send them in a header instead",
		"notify.webhooks[1].token_env: give token_file or token_env, not both",
		"notify.webhooks[2].header: sends nothing without token_file or token_env",
		`notify.webhooks[3].header: "X Key" is not a header name`,
		"notify.webhooks[4].header: Host is set by the agent or the HTTP client, not a place for a token",
		"notify.webhooks[5].url: no URL",
		"notify.queue: ", "notify.timeout: ", "notify.max_backoff: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if strings.Contains(got, "S3cret") || strings.Contains(got, "alice") || strings.Contains(got, "PATHSECRET") {
		t.Errorf("a secret in the problems:\n%s", got)
	}
}

// The token goes in its header (Authorization unless named), read from its
// file or variable; one that cannot be read, is empty or holds a line break
// is a problem at its key (Board), and Sender refuses to start.
func TestWebhookTokenHeader(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hook.token")
	if err := os.WriteFile(file, []byte("Bearer file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONAGENT_TEST_HOOK_TOKEN", "env-token")
	for _, c := range []struct {
		w       Webhook
		name    string
		value   string
		problem string
	}{
		{Webhook{URL: "http://h/a"}, "", "", ""},
		{Webhook{URL: "http://h/a", TokenFile: file}, "Authorization", "Bearer file-token", ""},
		{Webhook{URL: "http://h/a", Header: "x-api-key", TokenEnv: "MONAGENT_TEST_HOOK_TOKEN"}, "X-Api-Key", "env-token", ""},
		{Webhook{URL: "http://h/a", TokenFile: file + ".none"}, "", "", "notify.webhooks[0].token_file: " + file + ".none: no such file or directory"},
		{Webhook{URL: "http://h/a", TokenEnv: "MONAGENT_TEST_UNSET"}, "", "", "notify.webhooks[0].token_env: $MONAGENT_TEST_UNSET is empty or unset"},
	} {
		h, err := c.w.header("notify.webhooks[0]")
		if c.problem != "" {
			var p conf.List
			(&Config{Webhooks: []Webhook{c.w}}).Board(&p)
			if err == nil || err.Error() != "config: "+c.problem || len(p.Problems) != 1 || p.Problems[0].Error() != "config: "+c.problem {
				t.Errorf("%+v: header error %v, board %v; want %s", c.w, err, p.Problems, c.problem)
			}
			if s, err := (&Config{Webhooks: []Webhook{c.w}}).Sender(nil); s != nil || err == nil {
				t.Errorf("%+v: a sender without its token (%v)", c.w, err)
			}
			continue
		}
		if err != nil || len(h) > 1 || h.Get(c.name) != c.value {
			t.Errorf("%+v: header %v, %v; want %s: %s", c.w, h, err, c.name, c.value)
		}
	}
	t.Setenv("MONAGENT_TEST_HOOK_TOKEN", "two\nlines")
	_, err := (&Webhook{URL: "http://h/a", TokenEnv: "MONAGENT_TEST_HOOK_TOKEN"}).header("k")
	if err == nil || strings.Contains(err.Error(), "two") || !strings.HasPrefix(err.Error(), "config: k.token_env: the token holds a line break") {
		t.Errorf("a token with a line break: %v", err)
	}
}

// No webhooks, no sender; webhooks, one sender with a receiver each.
func TestConfigSender(t *testing.T) {
	var n Config
	n.Defaults()
	if s, err := n.Sender(nil); s != nil || err != nil {
		t.Fatalf("without webhooks: %v, %v", s, err)
	}
	n.Webhooks = []Webhook{{URL: "http://127.0.0.1:9/a"}, {URL: "http://127.0.0.1:9/b"}}
	s, err := n.Sender(nil)
	if err != nil || s == nil || len(s.Stats()) != 2 {
		t.Fatalf("two webhooks: %v, %v", s, err)
	}
}
