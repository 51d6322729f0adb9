package agent

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/collect/collecttest"
	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// pipeExtts reads struct ptp_extts_event encodings from a pipe, as a PHC's
// character device returns them, decoding them with phc.DecodeExttsEvents.
// MissedEdges is scripted by the test.
type pipeExtts struct {
	r      *os.File
	dom    timebase.Domain
	buf    [exttsBatch * phc.ExttsEventSize]byte
	events atomic.Uint64
	missed atomic.Uint64
	closed atomic.Bool
}

func (p *pipeExtts) Read(ctx context.Context, dst []phc.ExttsEvent) (int, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		p.r.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		m, err := p.r.Read(p.buf[:min(len(dst), exttsBatch)*phc.ExttsEventSize])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return 0, err
		}
		n, err := phc.DecodeExttsEvents(dst, p.buf[:m], p.dom)
		p.events.Add(uint64(n))
		return n, err
	}
}

func (p *pipeExtts) Stats() phc.ExttsStats {
	return phc.ExttsStats{Events: p.events.Load(), MissedEdges: p.missed.Load()}
}

func (p *pipeExtts) Close() error { p.closed.Store(true); return p.r.Close() }

type exttsFixture struct {
	t  *testing.T
	p  *pipeExtts
	w  *os.File
	d  *exttsSource
	s  *collect.EventSource[exttsStamp]
	tr *timebase.Translators
}

func exttsTestConfig() ExttsConfig {
	var x ExttsConfig
	x.defaults()
	x.Enabled = true
	var c0, c1 ExttsChannelConfig
	c0.defaults()
	c0.Name, c0.Period = "gnss_pps", time.Second
	c1.defaults()
	c1.Channel, c1.Pin, c1.Edges = 1, 2, "both"
	x.Channels = []ExttsChannelConfig{c0, c1}
	return x
}

func newExttsFixture(t *testing.T, tr *timebase.Translators) *exttsFixture {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeExtts{r: r, dom: timebase.PHC(0)}
	opens := 0
	d := newExttsSource(exttsTestConfig(), timebase.PHC(0), tr, func() (exttsReader, error) {
		if opens++; opens > 1 {
			return nil, errors.New("opened twice")
		}
		return p, nil
	})
	s, err := collect.Decode("extts:/dev/ptp0", time.Second, 1024, d)
	if err != nil {
		t.Fatal(err)
	}
	stop := collecttest.Start(s)
	t.Cleanup(func() {
		stop()
		w.Close()
		if !p.closed.Load() {
			t.Error("the reader was not closed")
		}
	})
	return &exttsFixture{t: t, p: p, w: w, d: d, s: s, tr: tr}
}

// write feeds events (channel, PHC ns, flags) in one write and waits until
// the producer queued them.
func (f *exttsFixture) write(evs ...[3]int64) {
	f.t.Helper()
	var b []byte
	for _, e := range evs {
		b = phc.AppendExttsEvent(b, uint32(e[0]), e[1], uint32(e[2]))
	}
	want := f.s.Queue().Received() + uint64(len(evs))
	if _, err := f.w.Write(b); err != nil {
		f.t.Fatal(err)
	}
	waitReceived(f.t, f.s.Queue().Received, want)
}

func TestExttsSourceShipsStampsAtTheirRealtime(t *testing.T) {
	// fakeModels: PHC 0 = REALTIME + 37 s.
	f := newExttsFixture(t, fakeModels(true))
	const phc0 = epoch + 5e9 + 37e9
	f.write([3]int64{0, phc0, 0},
		[3]int64{1, phc0 + 1e6, int64(phc.EdgeFalling) | 1},
		[3]int64{1, phc0 + 2e6, 0},
		[3]int64{7, phc0 + 3e6, 0}) // not configured: counted, not shipped
	recs := collectAll(t, f.s)
	type want struct {
		t             int64
		channel, edge string
		name          string
	}
	wants := []want{{epoch + 5e9, "0", "rising", "gnss_pps"}, {epoch + 5e9 + 1e6, "1", "falling", "channel1"},
		{epoch + 5e9 + 2e6, "1", "unknown", "channel1"}}
	if len(recs) != len(wants) {
		t.Fatalf("%d records, want %d: %+v", len(recs), len(wants), recs)
	}
	for i, w := range wants {
		r := recs[i]
		if r.Measurement != "extts_event" || tagOf(r, "channel") != w.channel || tagOf(r, "edge") != w.edge ||
			tagOf(r, "name") != w.name || tagOf(r, "phc") != "/dev/ptp0" {
			t.Errorf("record %d: %s %v, want channel %s edge %s name %s", i, r.Measurement, r.Tags, w.channel, w.edge, w.name)
		}
		if d := r.TimeNS - w.t; d < -100 || d > 100 {
			t.Errorf("record %d at %d, want %d (±100 ns)", i, r.TimeNS, w.t)
		}
		if got := gpioField(t, r, "phc_ns").I; got != phc0+int64(i)*1e6 {
			t.Errorf("record %d: phc_ns %d, want %d", i, got, phc0+int64(i)*1e6)
		}
		if u := gpioField(t, r, "uncertainty_ns").I; u <= 0 || u > 1000 {
			t.Errorf("record %d: uncertainty_ns %d, want the model's (0, 1000]", i, u)
		}
	}
	for k, want := range map[string]uint64{"events": 4, "unlisted": 1, "untranslated": 0, "kernel_lost": 0,
		"channel0_events": 1, "channel1_events": 2} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("%s %d, want %d", k, got, want)
		}
	}
	// The read latency per channel, from each stamp moved to REALTIME.
	if n := collecttest.Self(t, f.s, "channel1_latency_samples").I; n != 2 {
		t.Errorf("channel1_latency_samples %d, want 2", n)
	}
	if p50, mx := collecttest.Self(t, f.s, "channel1_latency_p50_ns").I, collecttest.Self(t, f.s, "channel1_latency_max_ns").I; p50 <= 0 || p50 > mx {
		t.Errorf("channel1 latency p50 %d max %d", p50, mx)
	}
}

func TestExttsSourceWithoutModelShipsAtReadTimeAndCounts(t *testing.T) {
	f := newExttsFixture(t, timebase.NewTranslators())
	before, _ := timebase.Realtime.Now()
	f.write([3]int64{0, 42, 0}, [3]int64{0, 43, 0})
	after, _ := timebase.Realtime.Now()
	recs := collectAll(t, f.s)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for i, r := range recs {
		if r.TimeNS < before || r.TimeNS > after+2 || gpioField(t, r, "phc_ns").I != int64(42+i) {
			t.Errorf("record %d at %d, want the read time in [%d, %d] and phc_ns %d", i, r.TimeNS, before, after, 42+i)
		}
		if _, ok := r.Field("uncertainty_ns"); ok {
			t.Errorf("an untranslated record claims an uncertainty")
		}
	}
	if recs[0].TimeNS == recs[1].TimeNS {
		t.Errorf("two stamps of a channel at one time %d", recs[0].TimeNS)
	}
	if got := collecttest.Self(t, f.s, "untranslated").U; got != 2 {
		t.Errorf("untranslated %d, want 2", got)
	}
}

// Missed edges (a period set, stamps missing) are the kernel losses; equal
// translated times are bumped.
func TestExttsSourceCountsMissedEdgesAndBumps(t *testing.T) {
	f := newExttsFixture(t, fakeModels(true))
	const phc0 = epoch + 5e9 + 37e9
	f.p.missed.Store(3)
	f.write([3]int64{0, phc0, 0}, [3]int64{0, phc0, 0})
	recs := collectAll(t, f.s)
	if len(recs) != 2 || recs[1].TimeNS != recs[0].TimeNS+1 {
		t.Fatalf("records %+v, want two, 1 ns apart", recs)
	}
	for k, want := range map[string]uint64{"kernel_lost": 3, "missed_edges": 3, "time_bumps": 1} {
		if got := collecttest.Self(t, f.s, k).U; got != want {
			t.Errorf("%s %d, want %d", k, got, want)
		}
	}
}

func TestExttsSourceErrorNamesDevice(t *testing.T) {
	x := exttsTestConfig()
	x.PHC = t.TempDir() + "/ptp9"
	d := newExttsSource(x, timebase.PHC(9), timebase.NewTranslators(), nil)
	s, err := collect.Decode("extts", time.Second, x.Ring, d)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Produce(context.Background(), s.Queue())
	if err == nil || !strings.Contains(err.Error(), x.PHC) {
		t.Fatalf("produce on a missing PHC: %v, want an error naming %s", err, x.PHC)
	}
}

// A real PHC, when there is one: its channel opens, or it says why not.
func TestExttsRealDeviceOpensOrNamesWhyNot(t *testing.T) {
	x := exttsTestConfig()
	if _, err := os.Stat("/dev/ptp0"); err != nil {
		t.Skipf("no /dev/ptp0 here (%v): the real-device half needs a PHC with extts channels", err)
	}
	x.PHC = "/dev/ptp0"
	rd, err := phc.OpenExtts(x.PHC, x.Channels[0].request())
	if err != nil {
		if !strings.Contains(err.Error(), "/dev/ptp0") {
			t.Errorf("open error %v does not name the device", err)
		}
		t.Skipf("/dev/ptp0: %v", err)
	}
	rd.Close()
}

// An extts PHC the phc section does not measure could never be translated:
// refused at start, naming the key.
func TestExttsOnAnUnmeasuredPHCIsRefused(t *testing.T) {
	c := Default()
	c.PHC.Devices = []string{"/dev/ptp0"}
	c.Extts.Enabled, c.Extts.PHC = true, "/dev/ptp1"
	c.Extts.Channels = []ExttsChannelConfig{{Channel: 0, Pin: -1, Edges: "rising"}}
	_, err := buildExttsSources(&Env{Config: &c})
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "extts.phc" || !strings.Contains(ke.Reason, "not among phc.devices") {
		t.Fatalf("%v; want an extts.phc error", err)
	}
}
