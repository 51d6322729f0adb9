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
	"github.com/monagent/monagent/judge"
)

// ntp.chrony and ntp.ntpd written as lists are several instances, each
// checked at its own key; one mapping is one, as before.
func TestDaemonInstancesConfig(t *testing.T) {
	c, err := Parse("two.yaml", []byte("ntp:\n  enabled: true\n  chrony:\n    - {name: a, enabled: true, socket: /run/a.sock}\n    - {name: b, enabled: true, address: 127.0.0.1:323}\n"+
		"  ntpd:\n    - {name: x, enabled: true}\n    - {name: y, enabled: true, address: '127.0.0.1:1123'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ck, chronys := c.NTP.Chrony.All()
	d := Default()
	nk, ntpds := c.NTP.Ntpd.All()
	if len(chronys) != 2 || ck[1] != "ntp.chrony[1]" || chronys[1].target() != "127.0.0.1:323" || chronys[1].Interval != d.NTP.Chrony.First().Interval ||
		len(ntpds) != 2 || nk[0] != "ntp.ntpd[0]" || ntpds[0].Address != "127.0.0.1:123" || ntpds[1].Address != "127.0.0.1:1123" {
		t.Errorf("chrony %v %+v; ntpd %v %+v", ck, chronys, nk, ntpds)
	}
	one, err := Parse("one.yaml", []byte("ntp:\n  enabled: true\n  chrony: {enabled: true}\n"))
	if k, all := one.NTP.Chrony.All(); err != nil || len(all) != 1 || k[0] != "ntp.chrony" || all[0].target() != DefaultChronySocket {
		t.Errorf("one mapping: %v %v %+v", err, k, all)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"  chrony:\n    - {enabled: true, socket: /a}\n    - {name: b, enabled: true, socket: /b}\n", "bad.yaml:4: ntp.chrony[0].name"},
		{"  chrony:\n    - {name: a, enabled: true, socket: /a}\n    - {name: b, enabled: true, socket: /a}\n", "bad.yaml:5: ntp.chrony[1].socket"},
		{"  ntpd:\n    - {name: a, enabled: true}\n    - {name: b, enabled: true}\n", "bad.yaml:5: ntp.ntpd[1].address"},
		{"  ntpd:\n    - {name: a, enabled: true, address: nowhere}\n", "bad.yaml:4: ntp.ntpd[0].address"},
	} {
		_, err := Parse("bad.yaml", []byte("ntp:\n  enabled: true\n"+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// TestChronyInstancesAgainstTwoChronyd: two chronyd (-x, each in a
// namespace of its own) read as two named instances of ntp.chrony: each
// source is chrony:<name>, every record of each carries instance=<name>,
// and each instance's system clock is judged apart.
func TestChronyInstancesAgainstTwoChronyd(t *testing.T) {
	c := Default()
	c.NTP.Enabled = true
	for i, n := range []string{"a", "b"} {
		h, _ := testbed.NewLink(t)
		d := testbed.StartChronyd(t, h, testbed.ChronydServerConf)
		def := Default()
		inst := *def.NTP.Chrony.First()
		inst.Name, inst.Enabled, inst.Socket = n, true, d.Socket
		if i == 0 {
			*c.NTP.Chrony.First() = inst
		} else {
			c.NTP.Chrony.Add(inst)
		}
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := judging.New(judging.Options{Log: log})
	srcs, err := buildChronySource(&Env{Config: &c, Log: log, judges: g})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]map[string]int{}
	var names []string
	for _, s := range srcs {
		defer s.Close()
		names = append(names, s.Name())
		b := &collect.Batch{Host: "h"}
		if err := s.Collect(context.Background(), b); err != nil {
			t.Fatalf("%s: %v", s.Name(), err)
		}
		checkRecordRules(t, b.Records)
		for _, r := range b.Records {
			if r.Measurement == "sync_state" {
				continue // the judged clock's, tagged by its source
			}
			inst := tagOf(r, "instance")
			if "chrony:"+inst != s.Name() {
				t.Errorf("%s: a %s record tagged instance=%q", s.Name(), r.Measurement, inst)
			}
			if per[inst] == nil {
				per[inst] = map[string]int{}
			}
			per[inst][r.Measurement]++
		}
	}
	t.Logf("sources %v; records per instance %v", names, per)
	if strings.Join(names, " ") != "chrony:a chrony:b" || per["a"]["chrony_tracking"] != 1 || per["b"]["chrony_tracking"] != 1 ||
		per["a"]["chrony_serverstats"] != 1 || per["b"]["chrony_serverstats"] != 1 {
		t.Errorf("sources %v, records %v: want one tracking and serverstats record of each instance", names, per)
	}
	var judged []string
	for _, m := range g.Clocks() {
		judged = append(judged, m.Judged().Source())
	}
	if strings.Join(judged, " ") != "chrony:a chrony:b" {
		t.Errorf("judged %v", judged)
	}
}

// A real chronyd (-x) serving its own clock (`local stratum 1`: reference
// id 7F7F0101) is not a synchronised system clock: the chronyd monitor
// judges it not LOCKED, saying why (source on its local reference). Before,
// it was LOCKED with a 0 ns bound.
func TestChronyLocalReferenceIsNotLocked(t *testing.T) {
	h, _ := testbed.NewLink(t)
	d := testbed.StartChronyd(t, h, testbed.ChronydServerConf)
	c := Default()
	c.NTP.Enabled = true
	inst := c.NTP.Chrony.First()
	inst.Enabled, inst.Socket = true, d.Socket
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	g := judging.New(judging.Options{Log: log})
	srcs, err := buildChronySource(&Env{Config: &c, Log: log, judges: g})
	if err != nil {
		t.Fatal(err)
	}
	defer srcs[0].Close()
	local, reasons := 0, []string{}
	for i := 0; i < 100 && local < 5; i++ {
		b := &collect.Batch{Host: "h"}
		if err := srcs[0].Collect(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		for _, r := range b.Records {
			switch r.Measurement {
			case "chrony_tracking":
				if f, _ := r.Field("reference_id"); f.S == "7F7F0101" {
					local++
				}
			case "sync_state":
				f, _ := r.Field("reason")
				reasons = append(reasons, f.S)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if local < 5 {
		t.Fatalf("chronyd did not report its local reference (7F7F0101) in 20 s")
	}
	v := g.Clocks()[0].Judged().View(time.Now().UnixNano())
	t.Logf("%d tracking replies on the local reference: %s, bound %d ns; sync_state reasons %q", local, v.State, v.BoundNS, reasons)
	if v.State == judge.Locked || len(reasons) == 0 {
		t.Fatalf("judged %s (transitions %q), want not LOCKED", v.State, reasons)
	}
	if last := reasons[len(reasons)-1]; last != string(judge.ReasonLocalReference) && last != string(judge.ReasonUnsynced) {
		t.Errorf("last reason %q, want %q", last, judge.ReasonLocalReference)
	}
}
