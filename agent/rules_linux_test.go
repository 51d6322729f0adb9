package agent

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/marker"
	"github.com/monagent/monagent/ntp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sensors/sensorstest"
)

// checkRecordRules fails t for every record that breaks the data rules: a
// field or tag key given twice, two records sharing measurement, tag set and
// time (InfluxDB would keep one), a time that is not a REALTIME nanosecond of
// this century, a record without fields. It returns the records per
// measurement.
func checkRecordRules(t *testing.T, recs []record.Record) map[string]int {
	t.Helper()
	per := map[string]int{}
	keys := map[string]bool{}
	const y2000, y2100 = 946_684_800_000_000_000, 4_102_444_800_000_000_000
	for _, r := range recs {
		per[r.Measurement]++
		if len(r.Fields) == 0 {
			t.Errorf("%s at %d: no field", r.Measurement, r.TimeNS)
		}
		if r.TimeNS < y2000 || r.TimeNS > y2100 {
			t.Errorf("%s: time %d is no REALTIME nanosecond of this century", r.Measurement, r.TimeNS)
		}
		seen := map[string]bool{}
		for _, f := range r.Fields {
			if seen[f.Key] {
				t.Errorf("%s at %d: field %q twice", r.Measurement, r.TimeNS, f.Key)
			}
			seen[f.Key] = true
		}
		tags := make([]string, 0, len(r.Tags))
		tagSeen := map[string]bool{}
		for _, tg := range r.Tags {
			if tagSeen[tg.Key] {
				t.Errorf("%s at %d: tag %q twice", r.Measurement, r.TimeNS, tg.Key)
			}
			tagSeen[tg.Key] = true
			if tg.Value != "" { // InfluxDB drops empty tags
				tags = append(tags, tg.Key+"="+tg.Value)
			}
		}
		sort.Strings(tags)
		k := fmt.Sprintf("%s,%s %d", r.Measurement, strings.Join(tags, ","), r.TimeNS)
		if keys[k] {
			t.Errorf("two records share measurement, tags and time: %s", k)
		}
		keys[k] = true
	}
	return per
}

// ntpResponder answers SNTP requests on loopback as a stratum-2 server with
// this host's clock, until the test ends.
func ntpResponder(t *testing.T) string {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := c.ReadFromUDP(buf)
			if err != nil {
				return
			}
			if n < 48 {
				continue
			}
			now := time.Now().UnixNano()
			sec, frac := ntp.FromUnixNS(now)
			reply := make([]byte, 48)
			reply[0], reply[1], reply[3] = 0<<6|4<<3|4, 2, 0xec // no leap, v4, server; stratum 2; precision 2^-20
			binary.BigEndian.PutUint32(reply[12:], 0x7f000001)
			copy(reply[24:32], buf[40:48]) // origin: the request's transmit
			binary.BigEndian.PutUint32(reply[16:], sec)
			binary.BigEndian.PutUint32(reply[32:], sec)
			binary.BigEndian.PutUint32(reply[36:], frac)
			binary.BigEndian.PutUint32(reply[40:], sec)
			binary.BigEndian.PutUint32(reply[44:], frac)
			c.WriteToUDP(reply, from)
		}
	}()
	return c.LocalAddr().String()
}

// TestRecordRulesOverEverySource runs the agent with every source this
// machine can feed — system clocks, PHCs (none here; the e1000e's in the ARM
// guest), hwmon, thermal and IIO fixtures with a buffered ADC, markers sent
// to its socket (the same name with other tags at the same stamp, and the
// same stamp twice), an NTP server on loopback, HCA rank 0 with a rank 1
// beside it, the load generator — and its own self-metrics, and checks
// every record against the data rules. The sources that need a kernel
// device or a peer are checked by the same function where they run: GPIO
// on gpio-sim and PPS on pps-ktimer in the QEMU guests, the PTP probe
// against ptp4l.
func TestRecordRulesOverEverySource(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the agent for 4 s or more")
	}
	dir := t.TempDir()
	sys, dev := sensorstest.Board(t)
	addrs := freePorts(t, 2)
	key := writeKey(t, "hca.key", testHCAKey)
	cfg := hcaConfig(t, 0, addrs, key)
	cfg.Host = "rules"
	cfg.Paths.Sys, cfg.Paths.Dev, cfg.Paths.RuntimeDir = sys, dev, dir
	cfg.Clock.Interval = 100 * time.Millisecond
	cfg.PHC.Interval = 100 * time.Millisecond
	cfg.Sensors.Interval = 200 * time.Millisecond
	cfg.Sensors.Buffers = []SensorBufferConfig{DefaultSensorBuffer("TI-am335x-adc.0.auto", "voltage0", "voltage1")}
	cfg.Marker.Enabled, cfg.Marker.Socket, cfg.Marker.Interval = true, filepath.Join(dir, "m.sock"), 100*time.Millisecond
	cfg.Loadgen.Enabled, cfg.Loadgen.Rate, cfg.Loadgen.Interval = true, 2000, 50*time.Millisecond
	cfg.NTP.Enabled = true
	cfg.NTP.Servers = []NTPServerConfig{DefaultNTPServer(ntpResponder(t))}
	cfg.NTP.Servers[0].Interval, cfg.NTP.Servers[0].Burst, cfg.NTP.Servers[0].BurstSpacing = time.Second, 3, 50*time.Millisecond
	cfg.HCA.Resync = 500 * time.Millisecond
	cfg.SelfMetrics.Interval = 300 * time.Millisecond
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	startHCA(t, 1, addrs, key)
	out := &memSink{}
	a, err := newAgent(cfg, quietLog(), out)
	if err != nil {
		t.Fatal(err)
	}
	// The run lasts 4 s and then until every measurement below came (up to
	// 60 s), not a fixed 4 s: a loaded or emulated machine needs longer for
	// an HCA round or an NTP burst, and gets the same records.
	want := []string{"clock_offset", "timex", "sensor", "sensor_scan", "marker", "ntp_probe", "ntp_sample", "hca_sync", "hca_model", "monagent_loadgen", "monagent_source", "monagent"}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	go func() {
		for start := time.Now(); ctx.Err() == nil && (time.Since(start) < 4*time.Second || slices.ContainsFunc(want, func(m string) bool { return out.count(m) == 0 })); {
			time.Sleep(50 * time.Millisecond)
		}
		cancel()
	}()
	go func() {
		// Markers once the socket is there: one series at one stamp twice,
		// and another series (another tag) at that stamp.
		var c *marker.Client
		for c == nil && ctx.Err() == nil {
			c, _ = marker.Dial(cfg.Marker.Socket)
			time.Sleep(20 * time.Millisecond)
		}
		if c == nil {
			return
		}
		defer c.Close()
		for i := 0; i < 20 && ctx.Err() == nil; i++ {
			now := time.Now().UnixNano()
			for _, rank := range []string{"0", "1", "0"} {
				m := marker.Marker{Name: "phase", Clock: marker.ClockRealtime, StampNS: now}
				m.AddTag("rank", rank)
				c.Send(m)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	if err := a.Run(ctx); err != nil {
		t.Fatal(err)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	per := checkRecordRules(t, out.recs)
	t.Logf("%d records: %v", len(out.recs), per)
	for _, m := range want {
		if per[m] == 0 {
			t.Errorf("no %s record: the rules were not checked on it", m)
		}
	}
}
