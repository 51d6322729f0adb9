package agent

import (
	"strings"
	"testing"
)

// Issue 20 item 5: credentials in influx.url are refused, with an error that
// names the key and its line, points to token_file and token_env, and does
// not repeat the password (a parseable URL or not).
func TestInfluxURLWithCredentialsIsRefused(t *testing.T) {
	const secret = "hunter2-s3cret"
	for _, c := range []struct{ name, url, want string }{
		{"user and password", "http://admin:" + secret + "@127.0.0.1:8086", `x.yaml:3: influx.url: "http://admin:xxxxx@127.0.0.1:8086" holds credentials`},
		{"user alone", "https://admin@influx.example", `x.yaml:3: influx.url: "https://admin@influx.example" holds credentials`},
		{"not a URL", "http://admin:" + secret + "@127.0.0.1:8086/%zz", `x.yaml:3: influx.url: "http://admin:xxxxx@127.0.0.1:8086/%zz" is not an http:// or https:// URL`},
	} {
		t.Run(c.name, func(t *testing.T) {
			yaml := "influx:\n  enabled: true\n  url: " + c.url + "\n  bucket: db/rp\n"
			_, err := Parse("x.yaml", []byte(yaml))
			if err == nil {
				t.Fatalf("accepted:\n%s", yaml)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, c.want) || strings.Contains(msg, secret) {
				t.Fatalf("%s\nwant it to start %s, without the password", msg, c.want)
			}
			if strings.Contains(msg, "holds credentials") && (!strings.Contains(msg, "influx.token_file") || !strings.Contains(msg, "influx.token_env")) {
				t.Fatalf("%s: does not point to influx.token_file / influx.token_env", msg)
			}
		})
	}
	c := Default()
	c.Influx.Enabled, c.Influx.URL, c.Influx.Bucket = true, "http://127.0.0.1:8086", "db/rp"
	if err := validate(&lib{&c.Influx}); err != nil {
		t.Fatalf("a URL without credentials: %v", err)
	}
}
