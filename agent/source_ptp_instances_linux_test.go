package agent

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// ptp.ptp4l written as a list is several instances, each checked at its
// own key; written as one mapping it is one, as before.
func TestPtp4lInstancesConfig(t *testing.T) {
	one, err := Parse("one.yaml", []byte("ptp:\n  enabled: true\n  ptp4l:\n    enabled: true\n    socket: /run/a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if keys, all := one.PTP.Ptp4l.All(); len(all) != 1 || keys[0] != "ptp.ptp4l" || all[0].Socket != "/run/a" || all[0].Interval != time.Second {
		t.Errorf("one mapping: %v %+v", keys, all)
	}
	two, err := Parse("two.yaml", []byte("ptp:\n  enabled: true\n  ptp4l:\n    - {name: a, enabled: true, socket: /run/a}\n    - {name: b, enabled: true, socket: /run/b, domain: 24}\n"))
	if err != nil {
		t.Fatal(err)
	}
	keys, all := two.PTP.Ptp4l.All()
	if len(all) != 2 || keys[1] != "ptp.ptp4l[1]" || all[1].Name != "b" || all[1].Domain != 24 || all[1].Interval != time.Second || !all[1].Subscribe {
		t.Errorf("a list: %v %+v", keys, all)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"    - {enabled: true, socket: /run/a}\n    - {name: b, enabled: true, socket: /run/b}\n", "bad.yaml:4: ptp.ptp4l[0].name"},
		{"    - {name: a, enabled: true, socket: /run/a}\n    - {name: b, enabled: true, socket: /run/a}\n", "bad.yaml:5: ptp.ptp4l[1].socket"},
		{"    - {name: a, enabled: true, socket: /run/a}\n    - {name: a, enabled: true, socket: /run/b}\n", "bad.yaml:5: ptp.ptp4l[1].name"},
		{"    - {name: a, enabled: true, sockett: /run/a}\n", "bad.yaml:4: ptp.ptp4l[0].sockett: unknown key"},
	} {
		_, err := Parse("bad.yaml", []byte("ptp:\n  enabled: true\n  ptp4l:\n"+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestPtp4lInstancesAgainstTwoPtp4l: two ptp4l slaves (free_running, each
// with its master over a bridge of its own) read as two named instances of
// ptp.ptp4l: every record of each carries instance=<name>, each slave's port
// goes LISTENING to UNCALIBRATED by push when its master starts, and each
// instance's clock is judged apart.
func TestPtp4lInstancesAgainstTwoPtp4l(t *testing.T) {
	names := []string{"a", "b"}
	c := Default()
	c.PTP.Enabled = true
	var slaves []*testbed.Ptp4l
	var masters [][]*testbed.Host
	for i, n := range names {
		hosts := testbed.NewBridge(t, 2)
		slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{})
		slaves, masters = append(slaves, slave), append(masters, hosts)
		def := Default()
		inst := *def.PTP.Ptp4l.First()
		inst.Name, inst.Enabled, inst.Socket = n, true, slave.Socket
		if i == 0 {
			*c.PTP.Ptp4l.First() = inst
		} else {
			c.PTP.Ptp4l.Add(inst)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := judging.New(judging.Options{Log: log})
	srcs, err := buildPtp4lSource(&Env{Config: &c, Log: log, Translators: timebase.NewTranslators(), judges: g})
	if err != nil {
		t.Fatal(err)
	}
	var srcNames []string
	for _, s := range srcs {
		defer s.Close()
		srcNames = append(srcNames, s.Name())
		if r, ok := s.(collect.Runner); ok {
			runFor(t, r)
		}
	}
	if want := "ptp4l:a ptp4l_push:a ptp4l:b ptp4l_push:b"; strings.Join(srcNames, " ") != want {
		t.Fatalf("sources %v, want %s", srcNames, want)
	}
	time.Sleep(time.Second) // subscribed
	for _, hosts := range masters {
		testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
	}
	var all []record.Record
	up := func(inst string) bool {
		for _, r := range all {
			if r.Measurement == "ptp4l_port_event" && tagOf(r, "instance") == inst && fieldString(r, "state") == "UNCALIBRATED" {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(40 * time.Second); !up("a") || !up("b"); time.Sleep(500 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no UNCALIBRATED port event of both instances within 40 s\n%s\n%s", slaves[0].LogText(), slaves[1].LogText())
		}
		for _, s := range srcs {
			b := &collect.Batch{Host: "h"}
			s.Collect(context.Background(), b)
			all = append(all, b.Records...)
		}
	}
	checkRecordRules(t, all)
	per := map[string]map[string]int{}
	for _, r := range all {
		inst := tagOf(r, "instance")
		if r.Measurement == "sync_state" {
			continue // the judged clock's, tagged by its source (the socket)
		}
		if inst != "a" && inst != "b" {
			t.Fatalf("%s record without its instance: %v", r.Measurement, r.Tags)
		}
		if per[inst] == nil {
			per[inst] = map[string]int{}
		}
		per[inst][r.Measurement]++
	}
	t.Logf("records per instance: %v", per)
	for _, n := range names {
		if per[n]["ptp4l_port"] == 0 || per[n]["ptp4l_time_status"] == 0 || per[n]["ptp4l_port_event"] == 0 {
			t.Errorf("instance %s: %v", n, per[n])
		}
	}
	// Each instance's clock is judged apart (by its socket).
	var judged []string
	for _, m := range g.Clocks() {
		judged = append(judged, m.Judged().Source())
	}
	if want := "ptp4l:" + slaves[0].Socket + " ptp4l:" + slaves[1].Socket; strings.Join(judged, " ") != want {
		t.Errorf("judged %v, want %s", judged, want)
	}
}
