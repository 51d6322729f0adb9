package influx

import (
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"http://localhost:8086", ""},
		{"https://influx.example:443/", ""},
		{"ftp://x", "is not an http:// or https:// URL"},
		{"localhost:8086", "is not an http:// or https:// URL"},
		{"http://", "is not an http:// or https:// URL"},
		{"http://user:secret@host:8086", "holds credentials"},
	} {
		err := CheckURL(tc.url)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckURL(%q) = %v, want %q", tc.url, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("CheckURL(%q) shows the password: %v", tc.url, err)
		}
	}
}
