package agent

import "testing"

func TestResolveNTP(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.1": "10.0.0.1:123", "10.0.0.1:1123": "10.0.0.1:1123", "localhost": "127.0.0.1:123", "[::1]:123": "[::1]:123"} {
		got, err := resolveNTP(in)
		if err != nil || got.String() != want {
			t.Errorf("resolveNTP(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	if _, err := resolveNTP("no.such.host.invalid"); err == nil {
		t.Error("an unresolvable name was accepted")
	}
}
