package conf

import (
	"strings"
	"testing"
	"time"
)

// daemonEntry is an instance entry as a section has them.
type daemonEntry struct {
	Instance `yaml:",inline"`
	Socket   string        `yaml:"socket"`
	Interval time.Duration `yaml:"interval"`
}

func (d daemonEntry) Place() (string, string) { return "socket", d.Socket }

type daemonSection struct {
	Daemon Instances[daemonEntry] `yaml:"daemon"`
}

func decodeDaemons(t *testing.T, src string) *daemonSection {
	t.Helper()
	s := &daemonSection{Daemon: NewInstances("daemon", daemonEntry{Socket: "/run/d", Interval: time.Second})}
	if _, ps := Decode("x.yaml", []byte(src), s); len(ps) > 0 {
		t.Fatalf("decode: %v", ps)
	}
	return s
}

// One instance is a mapping at the key; several are a list, each decoded
// over the defaults, at key[i]; the walk checks either form.
func TestInstancesOneOrList(t *testing.T) {
	one := decodeDaemons(t, "daemon:\n  enabled: true\n  socket: /run/a\n")
	keys, all := one.Daemon.All()
	if len(all) != 1 || keys[0] != "daemon" || all[0].Socket != "/run/a" || all[0].Interval != time.Second || !one.Daemon.On() {
		t.Errorf("one: %v %+v", keys, all)
	}
	two := decodeDaemons(t, "daemon:\n  - {name: a, enabled: true}\n  - {name: b, socket: /run/b, interval: 2s}\n")
	keys, all = two.Daemon.All()
	if len(all) != 2 || keys[1] != "daemon[1]" || all[0].Socket != "/run/d" || all[1].Interval != 2*time.Second || all[1].Enabled {
		t.Errorf("two: %v %+v", keys, all)
	}
	off := decodeDaemons(t, "daemon:\n  socket: /run/a\n")
	if off.Daemon.On() {
		t.Error("On with no instance enabled")
	}
	s := &daemonSection{Daemon: NewInstances("daemon", daemonEntry{})}
	if _, ps := Decode("x.yaml", []byte("daemon:\n  - {name: a, sockett: /x}\n"), s); len(ps) != 1 || !strings.Contains(ps[0].Error(), ":2: daemon[0].sockett: unknown key") {
		t.Errorf("unknown key in a list entry: %v", ps)
	}
}

// Several enabled instances need distinct names and places; one alone
// needs no name; disabled ones are not checked.
func TestInstancesCheck(t *testing.T) {
	s := decodeDaemons(t, "daemon:\n  - {enabled: true, socket: /run/a}\n  - {name: b, enabled: true, socket: /run/a}\n  - {name: b, enabled: true, socket: /run/c}\n  - {name: 'x y'}\n")
	var l List
	var checked []string
	s.Daemon.Check(&l, func(key string, c daemonEntry) { checked = append(checked, key) })
	var got []string
	for _, ke := range l.Problems {
		got = append(got, ke.Key+": "+ke.Reason)
	}
	want := []string{
		`daemon[0].name: "": several instances need a name each (letters, digits and _; it tags their records)`,
		"daemon[1].socket: /run/a is another instance's: one daemon, read twice",
		`daemon[2].name: "b" names two instances`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(checked, " ") != "daemon[0] daemon[1] daemon[2]" {
		t.Errorf("checked %v, want the enabled instances", checked)
	}
	var one List
	decodeDaemons(t, "daemon:\n  enabled: true\n").Daemon.Check(&one, func(string, daemonEntry) {})
	if len(one.Problems) != 0 {
		t.Errorf("one unnamed instance: %v", one.Problems)
	}
}

func TestIsName(t *testing.T) {
	for s, want := range map[string]bool{"a": true, "eth0_b": true, "": false, "a-b": false, "a b": false, "é": false} {
		if IsName(s) != want {
			t.Errorf("IsName(%q) = %v", s, !want)
		}
	}
}
