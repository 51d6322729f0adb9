package agent

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/ntp"
	"github.com/monagent/monagent/ntp/ntptest"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// A server given by name is resolved when it is polled, not when the agent
// starts: while the name does not resolve (a board up before its DNS) each
// poll fails, counted, and the source goes on; once it resolves the samples
// come, tagged with the name, and the address is a field. After
// ntp.ResolveAfter failed polls in a row the name is resolved again (ntp's
// TestServerProbeResolvesWhenPolled tests the probe itself).
func TestNTPNameResolvedWhenPolled(t *testing.T) {
	srv := &ntptest.Server{Addr: netip.MustParseAddrPort("10.0.0.7:123"), Now: 1_795_000_000_000_000_000, Step: 7_000_000,
		OffsetNS: 4_000, DelayNS: 30_000, TxSource: sockts.SourceSoftware, RxSource: sockts.SourceSoftware}
	name, err := ntp.ParseServer("NTP.example.org")
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	opened := 0
	s, _ := newNTPSource(NTPServerConfig{Interval: time.Second, Burst: 1, Basic: true}, name, 20*time.Millisecond,
		func(netip.AddrPort) (ntp.Socket, error) { opened++; return srv, nil }, nil)
	s.p.Resolve = func(_ context.Context, host string) (netip.Addr, error) {
		if host != "ntp.example.org" {
			t.Errorf("resolving %q", host)
		}
		if answers++; answers <= 3 {
			return netip.Addr{}, fmt.Errorf("lookup %s: no such host", host)
		}
		return srv.Addr.Addr(), nil
	}
	if s.Name() != "ntp:ntp.example.org:123" {
		t.Fatalf("name %q", s.Name())
	}
	b := &collect.Batch{Host: "h"}
	for poll := 0; poll < 5; poll++ {
		s.lastPoll = time.Time{}
		err := s.Collect(context.Background(), b)
		if poll < 3 && (err == nil || !strings.Contains(err.Error(), "resolving ntp.example.org")) {
			t.Fatalf("poll %d before the name resolves: %v", poll, err)
		}
		if poll >= 3 && err != nil {
			t.Fatalf("poll %d: %v", poll, err)
		}
	}
	self := record.Record{Fields: s.SelfFields()}
	if f, _ := ntpField(self, "resolve_errors"); f.U != 3 || opened != 1 {
		t.Fatalf("resolve_errors %d, sockets %d; want 3, 1", f.U, opened)
	}
	if f, _ := ntpField(self, "resolves"); f.U != 1 {
		t.Fatalf("resolves %d, want 1", f.U)
	}
	probes := 0
	for _, r := range b.Records {
		if r.Measurement == "ntp_probe" {
			probes++
			if ntpTag(r, "server") != "ntp.example.org:123" {
				t.Errorf("server tag %q", ntpTag(r, "server"))
			}
			if f, _ := ntpField(r, "address"); f.S != "10.0.0.7:123" {
				t.Errorf("address field %q", f.S)
			}
		}
	}
	if probes != 2 {
		t.Fatalf("%d ntp_probe records, want 2 (none while the name did not resolve)", probes)
	}
	// The server stops answering: after ntp.ResolveAfter failures the name is
	// looked up again.
	srv.Silent = true
	for poll := 0; poll < ntp.ResolveAfter+1; poll++ {
		s.lastPoll = time.Time{}
		s.Collect(context.Background(), b)
	}
	if f, _ := ntpField(record.Record{Fields: s.SelfFields()}, "resolves"); f.U != 2 {
		t.Fatalf("resolves %d after %d failed polls, want 2", f.U, ntp.ResolveAfter+1)
	}
}

// ntptestOpen opens srv as the socket of any address.
func ntptestOpen(srv *ntptest.Server) func(netip.AddrPort) (ntp.Socket, error) {
	return func(netip.AddrPort) (ntp.Socket, error) { return srv, nil }
}

// ntpRecordKey is what InfluxDB keeps one point of: measurement + tags + time.
func ntpRecordKey(r record.Record) string {
	var b strings.Builder
	b.WriteString(r.Measurement)
	for _, tg := range r.Tags {
		fmt.Fprintf(&b, ",%s=%s", tg.Key, tg.Value)
	}
	fmt.Fprintf(&b, " %d", r.TimeNS)
	return b.String()
}

func ntpField(r record.Record, key string) (record.Field, bool) {
	i := slices.IndexFunc(r.Fields, func(f record.Field) bool { return f.Key == key })
	if i < 0 {
		return record.Field{}, false
	}
	return r.Fields[i], true
}

func ntpIntField(t *testing.T, r record.Record, key string) int64 {
	t.Helper()
	f, ok := ntpField(r, key)
	if !ok {
		t.Fatalf("%s has no %s", r.Measurement, key)
	}
	return f.I
}

func ntpTag(r record.Record, key string) string {
	for _, tg := range r.Tags {
		if tg.Key == key {
			return tg.Value
		}
	}
	return ""
}

// TestNTPBurstRecordsAtTheirOwnT4: a burst of N exchanges gives N ntp_sample
// records, each at its own T4 and none sharing measurement + tags + time with
// another (InfluxDB would keep only the last); ntp_probe is at the kept one's
// T4. The old source stamped them all with the collection time.
func TestNTPBurstRecordsAtTheirOwnT4(t *testing.T) {
	const burst = 5
	srv := &ntptest.Server{Addr: netip.MustParseAddrPort("10.0.0.1:123"), Now: 1_795_000_000_000_000_000, Step: 7_000_000,
		OffsetNS: 4_000, DelayNS: 30_000, ProcessingNS: 5_000, KernelTxLagNS: 2_000,
		TxSource: sockts.SourceSoftware, RxSource: sockts.SourceSoftware}
	sc := NTPServerConfig{Interval: time.Second, Burst: burst, BurstSpacing: time.Nanosecond}
	s, _ := newNTPSource(sc, ntp.Server{Addr: srv.Addr.Addr(), Port: srv.Addr.Port()}, time.Second, ntptestOpen(srv), nil)
	b := &collect.Batch{Host: "h"}
	for poll := 0; poll < 3; poll++ {
		s.lastPoll = time.Time{}
		if err := s.Collect(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	keys, keptKeys := map[string]bool{}, map[string]bool{}
	var samples, kept int
	for _, r := range b.Records {
		k := ntpRecordKey(r)
		if keys[k] {
			t.Errorf("two records share %s", k)
		}
		keys[k] = true
		switch r.Measurement {
		case "ntp_sample":
			samples++
			if t4 := ntpIntField(t, r, "t4_ns"); r.TimeNS != t4 {
				t.Errorf("ntp_sample at %d, its T4 is %d", r.TimeNS, t4)
			}
			if f, _ := ntpField(r, "kept"); f.I == 1 {
				kept++
				keptKeys[k] = true
			}
		}
	}
	for _, r := range b.Records {
		if r.Measurement != "ntp_probe" {
			continue
		}
		k := strings.Replace(ntpRecordKey(r), "ntp_probe", "ntp_sample", 1)
		if !keptKeys[k] {
			t.Errorf("ntp_probe at %d is not at its kept sample's T4", r.TimeNS)
		}
	}
	if samples != 3*burst || kept != 3 {
		t.Fatalf("%d ntp_sample records (%d kept) for 3 bursts of %d", samples, kept, burst)
	}
}

// TestNTPMixedExchangeTranslatedPerStamp: with only the receive side stamped
// by the NIC, T4 goes through the PHC model and the user-space T1 stays as it
// is; the record says the exchange is mixed. The old translate moved T1 as if
// it were PHC time, off by the PHC's offset from REALTIME.
func TestNTPMixedExchangeTranslatedPerStamp(t *testing.T) {
	const phcAhead = 37_000_000_500 // PHC − REALTIME
	dom := timebase.PHC(3)
	trs := timebase.NewTranslators()
	tr := trs.Get(dom, timebase.DomainRealtime, 8)
	for i := int64(0); i < 8; i++ { // a model of a PHC running 37 s ahead
		rt := int64(1_795_000_000_000_000_000) + i*1_000_000_000
		tr.Add(timebase.Sample{Local: rt + phcAhead, Ref: rt})
	}
	srv := &ntptest.Server{Addr: netip.MustParseAddrPort("10.0.0.1:123"), Now: 1_795_000_004_000_000_000, Step: 1_000_000,
		OffsetNS: 4_000, DelayNS: 30_000, ProcessingNS: 5_000, PHCOffsetNS: phcAhead,
		TxSource: sockts.SourceUser, RxSource: sockts.SourceHardware}
	s, _ := newNTPSource(NTPServerConfig{Interval: time.Second, Burst: 1, Basic: true}, ntp.Server{Addr: srv.Addr.Addr(), Port: srv.Addr.Port()}, time.Second, ntptestOpen(srv), trs.ToRealtime(dom))
	b := &collect.Batch{Host: "h"}
	if err := s.Collect(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	var smp record.Record
	for _, r := range b.Records {
		if r.Measurement == "ntp_sample" {
			smp = r
		}
	}
	if smp.Measurement == "" {
		t.Fatal("no ntp_sample")
	}
	t1 := srv.Now
	t4 := t1 + 2*srv.DelayNS + srv.ProcessingNS
	if got := ntpIntField(t, smp, "t1_ns"); got != t1 {
		t.Errorf("t1_ns %d, want the user-space REALTIME %d untouched", got, t1)
	}
	if got := ntpIntField(t, smp, "t4_ns"); ntpAbs(got-t4) > 2 || ntpAbs(smp.TimeNS-t4) > 2 {
		t.Errorf("t4_ns %d at %d, want the hardware stamp moved to REALTIME %d", got, smp.TimeNS, t4)
	}
	if got := ntpIntField(t, smp, "offset_ns"); ntpAbs(got-srv.OffsetNS) > 2 {
		t.Errorf("offset %d, want %d", got, srv.OffsetNS)
	}
	if f, _ := ntpField(smp, "mixed"); f.I != 1 || ntpTag(smp, "timestamps") != "user/hardware" {
		t.Errorf("a user/hardware exchange not marked mixed: %v %q", f.I == 1, ntpTag(smp, "timestamps"))
	}
}

func ntpAbs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// unitFile reads the [Service] settings of a systemd unit (a key may repeat).
func unitFile(t *testing.T, path string) (service map[string][]string, text string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	service = map[string][]string{}
	section := ""
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "" || strings.HasPrefix(l, "#"):
		case strings.HasPrefix(l, "["):
			section = l
		case section == "[Service]":
			k, v, _ := strings.Cut(l, "=")
			service[k] = append(service[k], v)
		}
	}
	return service, string(raw)
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

// TestServiceUnitGivesWhatTheCodeNeeds checks configs/monagent.service against
// what the agent does with each board config installed as its --config: a
// runtime directory chronyd can answer into (not the unit's private /tmp), a
// writable spool, and the capabilities the PTP probe's sockets need, without
// CAP_SYS_TIME.
func TestServiceUnitGivesWhatTheCodeNeeds(t *testing.T) {
	svc, text := unitFile(t, "../configs/monagent.service")
	one := func(k string) string {
		if len(svc[k]) != 1 {
			t.Fatalf("monagent.service: %s set %d times", k, len(svc[k]))
		}
		return svc[k][0]
	}
	exec := strings.Fields(one("ExecStart"))
	i := slices.Index(exec, "--config")
	if i < 0 || i+1 >= len(exec) || exec[1] != "run" {
		t.Fatalf("ExecStart %q runs no config", exec)
	}
	installed := exec[i+1]
	m := regexp.MustCompile(`install .*configs/(\S+\.yaml) ` + regexp.QuoteMeta(installed)).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the unit's install notes put no board config at %s", installed)
	}
	rt := one("RuntimeDirectory")
	if rt == "" || strings.Contains(rt, "/") {
		t.Fatalf("RuntimeDirectory=%q", rt)
	}
	if mode, err := strconv.ParseUint(one("RuntimeDirectoryMode"), 8, 32); err != nil || mode&0o001 == 0 {
		t.Errorf("RuntimeDirectoryMode=%s: chronyd's user must be able to enter it (%v)", one("RuntimeDirectoryMode"), err)
	}
	if one("PrivateTmp") != "yes" {
		t.Errorf("PrivateTmp=%s", one("PrivateTmp"))
	}
	writable := []string{"/var/lib/" + one("StateDirectory"), "/run/" + rt}
	for _, v := range svc["ReadWritePaths"] {
		writable = append(writable, strings.Fields(v)...)
	}
	caps := strings.Fields(one("CapabilityBoundingSet"))
	if slices.Contains(caps, "CAP_SYS_TIME") {
		t.Error("the unit lets the agent set clocks (CAP_SYS_TIME)")
	}
	// systemd sets $RUNTIME_DIRECTORY to the runtime directory.
	t.Setenv("RUNTIME_DIRECTORY", "/run/"+rt)
	boards, _ := filepath.Glob("../configs/beaglebone-*.yaml")
	if !slices.Contains(boards, "../configs/"+m[1]) {
		t.Fatalf("the unit installs %s, not among %v", m[1], boards)
	}
	for _, path := range boards {
		c, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if got := c.Paths.Runtime(); got != "/run/"+rt {
			t.Errorf("%s: the agent's runtime directory is %s, the unit makes /run/%s", path, got, rt)
		}
		if c.NTP.Enabled && c.NTP.Chrony.First().Enabled && c.NTP.Chrony.First().Socket != "" && under(c.NTP.Chrony.First().Socket, "/tmp") {
			t.Errorf("%s: chronyd's socket %s is in /tmp, private to the unit", path, c.NTP.Chrony.First().Socket)
		}
		if c.Spool.Enabled && !slices.ContainsFunc(writable, func(d string) bool { return under(c.Spool.Dir, d) }) {
			t.Errorf("%s: spool %s is not under a writable path %v", path, c.Spool.Dir, writable)
		}
		need := map[string]bool{}
		if p := c.PTP.Probe; c.PTP.Enabled && p.Enabled {
			if p.Transport == "udp" {
				need["CAP_NET_BIND_SERVICE"] = true // ports 319 and 320
			} else {
				need["CAP_NET_RAW"] = true // packet sockets
			}
			if p.Timestamping == "hardware" {
				need["CAP_NET_ADMIN"] = true // SIOCSHWTSTAMP
			}
		}
		if c.NTP.Enabled && c.NTP.Timestamping == "hardware" {
			need["CAP_NET_ADMIN"] = true
		}
		for cp := range need {
			if !slices.Contains(caps, cp) {
				t.Errorf("%s needs %s; the unit's CapabilityBoundingSet is %v", path, cp, caps)
			}
		}
	}
}
