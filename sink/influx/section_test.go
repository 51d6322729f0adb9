package influx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/conf/conftest"
)

// Check names each bad key, only for an enabled section.
func TestSectionCheck(t *testing.T) {
	conftest.Checks(t, func(s *Section) { s.Enabled, s.URL, s.Bucket = true, "http://127.0.0.1:8086", "db/rp" }, []struct {
		Change func(*Section)
		Want   string
	}{
		{func(*Section) {}, ""},
		{func(s *Section) { s.Enabled, s.URL = false, "" }, ""},
		{func(s *Section) { s.URL = "localhost:8086" }, `influx.url: "localhost:8086" is not an http:// or https:// URL`},
		{func(s *Section) { s.Bucket = "" }, `influx.bucket: `},
		{func(s *Section) { s.BatchPoints = 0 }, "influx.batch_points: must be positive, got 0"},
		{func(s *Section) { s.BatchInterval = 0 }, "influx.batch_interval: "},
		{func(s *Section) { s.Timeout = 0 }, "influx.timeout: "},
		{func(s *Section) { s.MaxBackoff = 0 }, "influx.max_backoff: "},
		{func(s *Section) { s.DeadLetterMaxBytes = 4095 }, "influx.dead_letter_max_bytes: must be at least 4096 bytes, got 4095"},
	})
}

// A token file that cannot be read is a problem at influx.token_file
// (Board); no token at all is a word of advice at the key that would give
// it (Advise); the shipper's Config carries the token and every key.
func TestSectionToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("user:pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MONAGENT_TEST_TOKEN", "")
	for _, c := range []struct {
		file, env     string
		board, advice string
	}{
		{file, "", "", ""},
		{file + ".none", "", "influx.token_file: " + file + ".none: no such file or directory", ""},
		{"", "MONAGENT_TEST_TOKEN", "", "influx.token_env: no token: $MONAGENT_TEST_TOKEN is empty or unset, so writes go unauthenticated"},
		{"", "", "", "influx.token_env: no token: neither token_file nor token_env is set"},
	} {
		s := Section{Enabled: true, TokenFile: c.file, TokenEnv: c.env}
		var b, a conf.List
		s.Board(&b)
		s.Advise(&a)
		if got := b.Problems.Error(); (c.board == "") != (len(b.Problems) == 0) || !strings.Contains(got, c.board) {
			t.Errorf("%+v: board %q, want %q", s, got, c.board)
		}
		if got := a.Problems.Error(); (c.advice == "") != (len(a.Problems) == 0) || !strings.Contains(got, c.advice) {
			t.Errorf("%+v: advice %q, want %q", s, got, c.advice)
		}
	}
	s := Section{Enabled: true, URL: "http://h:8086", Org: "o", Bucket: "b", TokenFile: file, BatchPoints: 7, BatchInterval: time.Second,
		Timeout: 2 * time.Second, MaxBackoff: 3 * time.Second, Gzip: true, DeadLetter: "dl", DeadLetterMaxBytes: 9000}
	c, err := s.Config()
	if err != nil || *c != (Config{URL: "http://h:8086", Org: "o", Bucket: "b", Token: "user:pass", BatchPoints: 7, BatchInterval: time.Second,
		Timeout: 2 * time.Second, MaxBackoff: 3 * time.Second, Gzip: true, DeadLetter: "dl", DeadLetterMaxBytes: 9000}) {
		t.Errorf("the shipper's config %+v, %v", c, err)
	}
	s.TokenFile = file + ".none"
	if c, err := s.Config(); c != nil || err == nil || !strings.Contains(err.Error(), "influx.token_file") {
		t.Errorf("an unreadable token: %v, %v", c, err)
	}
}
