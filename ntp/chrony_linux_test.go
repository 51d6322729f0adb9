package ntp

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/facebook/time/ntp/chrony"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/timebase"
)

// chronycTracking parses `chronyc -n tracking` into the fields it prints.
func chronycTracking(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

var num = regexp.MustCompile(`^[+-]?[0-9.]+`)

// secondsField reads "+0.000001234 seconds" / "0.123 ppm slow" style values,
// with the sign chronyc gives in words.
func secondsField(t *testing.T, v string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(num.FindString(v), 64)
	if err != nil {
		t.Fatalf("chronyc value %q: %v", v, err)
	}
	if strings.HasSuffix(v, "slow") {
		f = -f
	}
	return f
}

func TestChronyMonitorMatchesChronyc(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	server := testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	client := testbed.StartChronyd(t, cli, testbed.ChronydClientConf(srv.Addr.String(), 0, ""))
	m := NewChrony(client.Socket, t.TempDir(), time.Second)
	defer m.Close()
	// Wait until the client has selected the server.
	deadline := time.Now().Add(20 * time.Second)
	for {
		tr, err := m.Tracking(t.Context())
		if err == nil && tr.Stratum == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client did not synchronise: %+v %v", tr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Compare with chronyc for the same update (equal Ref time).
	// Root dispersion is computed by chronyd at each request (it grows with the
	// time since the update), so chronyc's must lie between a monitor reading
	// before and one after it.
	var tr, after chrony.Tracking
	var c map[string]string
	for i := 0; ; i++ {
		var err error
		tr, err = m.Tracking(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out, err := client.Chronyc("-n", "tracking")
		if err != nil {
			t.Fatalf("chronyc: %v\n%s", err, out)
		}
		c = chronycTracking(out)
		if after, err = m.Tracking(t.Context()); err != nil {
			t.Fatal(err)
		}
		if c["Ref time (UTC)"] == tr.RefTime.UTC().Format("Mon Jan 02 15:04:05 2006") && after.RefTime.Equal(tr.RefTime) {
			break
		}
		if i == 20 {
			t.Fatalf("never caught both at one update: ours %v, chronyc %q", tr.RefTime, c["Ref time (UTC)"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := fmt.Sprintf("%08X (%s)", tr.RefID, tr.IPAddr); c["Reference ID"] != want {
		t.Errorf("reference id: chronyc %q, monitor %q", c["Reference ID"], want)
	}
	if c["Stratum"] != strconv.Itoa(int(tr.Stratum)) {
		t.Errorf("stratum: chronyc %q, monitor %d", c["Stratum"], tr.Stratum)
	}
	// chronyc rounds: 9 decimals for seconds, 3 for ppm, 1 for the interval.
	for _, f := range []struct {
		key   string
		got   float64
		round float64
	}{
		{"Last offset", tr.LastOffset, 1e-9},
		{"RMS offset", tr.RMSOffset, 1e-9},
		{"Frequency", tr.FreqPPM, 1e-3}, // chronyc prints |freq| with "fast" (positive) or "slow" (negative)
		{"Residual freq", tr.ResidFreqPPM, 1e-3},
		{"Skew", tr.SkewPPM, 1e-3},
		{"Root delay", tr.RootDelay, 1e-9},
		{"Update interval", tr.LastUpdateInterval, 0.1},
	} {
		want := secondsField(t, c[f.key])
		if math.Abs(want-f.got) > f.round/2+1e-12 {
			t.Errorf("%s: chronyc %q, monitor %g", f.key, c[f.key], f.got)
		}
	}
	if d := secondsField(t, c["Root dispersion"]); d < tr.RootDispersion-0.5e-9 || d > after.RootDispersion+0.5e-9 {
		t.Errorf("root dispersion: chronyc %q outside the monitor's %.9f..%.9f", c["Root dispersion"], tr.RootDispersion, after.RootDispersion)
	}
	t.Logf("tracking: chronyc %q / monitor ref %08X stratum %d last offset %.9f s rms %.9f s freq %.3f ppm",
		c["Last offset"], tr.RefID, tr.Stratum, tr.LastOffset, tr.RMSOffset, tr.FreqPPM)

	srcs, err := m.Sources(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 1 || srcs[0].Data.IPAddr.String() != srv.Addr.String() || srcs[0].Stats == nil || srcs[0].NTPData == nil {
		t.Fatalf("sources %+v", srcs)
	}
	if nd := srcs[0].NTPData; nd.TotalValidCount == 0 || nd.Stratum != 1 {
		t.Fatalf("ntpdata %+v", nd)
	}
	// The same in integer units, each part at the time it was answered.
	before, _ := timebase.Realtime.Now()
	cs, err := m.Status(t.Context())
	if err != nil || cs.Tracking == nil || cs.Tracking.Stratum != 2 || cs.ServerStats == nil {
		t.Fatalf("status %+v: %v", cs, err)
	}
	if len(cs.Sources) != 1 || cs.Sources[0].Address != srv.Addr.String() || cs.Sources[0].Stats == nil ||
		cs.Sources[0].NTP == nil || cs.Sources[0].NTP.TotalValid == 0 || cs.Sources[0].NTP.RxTimestamping == 0 {
		t.Fatalf("status sources %+v", cs.Sources)
	}
	if end, _ := timebase.Realtime.Now(); cs.TrackingNS < before || cs.SourcesNS < cs.TrackingNS || cs.ServerStatsNS < cs.SourcesNS || end < cs.ServerStatsNS {
		t.Fatalf("status times %d %d %d not within %d..%d in order", cs.TrackingNS, cs.SourcesNS, cs.ServerStatsNS, before, end)
	}

	// Server statistics, and a restart of that chronyd.
	sm := NewChrony(server.Socket, t.TempDir(), time.Second)
	defer sm.Close()
	st, err := sm.ServerStats(t.Context())
	if err != nil || st.NTPHits == 0 {
		t.Fatalf("serverstats %+v %v", st, err)
	}
	server.Stop()
	if _, err := sm.ServerStats(t.Context()); err == nil {
		t.Fatal("serverstats answered by a stopped chronyd")
	}
	server.Start()
	var st2 ServerStats
	for i := 0; i < 20; i++ {
		if st2, err = sm.ServerStats(t.Context()); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil || sm.Reconnects.Load() < 2 {
		t.Fatalf("after restart: %v, reconnects %d", err, sm.Reconnects.Load())
	}
	t.Logf("serverstats before restart %+v, after %+v", st, st2)
}

func TestChronyMonitorErrors(t *testing.T) {
	m := NewChrony("/nonexistent/chronyd.sock", t.TempDir(), 100*time.Millisecond)
	if _, err := m.Tracking(t.Context()); err == nil || !strings.Contains(err.Error(), "/nonexistent/chronyd.sock") {
		t.Fatalf("missing socket: %v", err)
	}
	port := netip.MustParseAddrPort("127.0.0.1:9")
	u := NewChrony(port.String(), "", 100*time.Millisecond)
	if _, err := u.Tracking(t.Context()); err == nil {
		t.Fatal("tracking answered by nobody")
	}
}
