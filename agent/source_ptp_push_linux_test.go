package agent

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/ptp"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

func fieldString(r record.Record, key string) string {
	for _, f := range r.Fields {
		if f.Key == key && f.Kind == record.KindString {
			return f.S
		}
	}
	return ""
}

// TestPtp4lPushAndSlaveEventsAgainstPtp4l: the ptp4l section with its
// defaults (subscribe on) and an event monitor, against a real master and a
// free-running slave over veth: the slave's port state changes are
// ptp4l_port_event records at the time they were read, from the state before
// to the new one — LISTENING to UNCALIBRATED when the master appears,
// UNCALIBRATED to LISTENING when it is stopped — and every Sync is a
// ptp4l_sync record at its t2 with the offset ptp4l computed; every record
// follows the data rules.
func TestPtp4lPushAndSlaveEventsAgainstPtp4l(t *testing.T) {
	hosts := testbed.NewBridge(t, 2)
	events := filepath.Join(t.TempDir(), "ptp4l-events")
	slave := testbed.StartPtp4l(t, hosts[1], testbed.Ptp4lOptions{Extra: "slave_event_monitor " + events + "\n"})
	c := Default()
	c.PTP.Enabled, c.PTP.Ptp4l.First().Enabled, c.PTP.Ptp4l.First().Socket, c.PTP.Ptp4l.First().EventMonitor = true, true, slave.Socket, events
	if !c.PTP.Ptp4l.First().Subscribe {
		t.Fatal("subscribe is not the default")
	}
	srcs, err := buildPtp4lSource(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: timebase.NewTranslators()})
	if err != nil {
		t.Fatal(err)
	}
	if len(srcs) != 3 {
		t.Fatalf("%d sources, want the poll, the push and the event monitor", len(srcs))
	}
	for _, s := range srcs {
		defer s.Close()
		if r, ok := s.(collect.Runner); ok {
			runFor(t, r)
		}
	}
	var all []record.Record
	collectAll := func() {
		for _, s := range srcs {
			b := &collect.Batch{Host: "h"}
			s.Collect(context.Background(), b)
			all = append(all, b.Records...)
		}
	}
	// find is the first port event from → to read at or after after: beside
	// other work the master's announces can come too late for the slave's
	// timeout, and the port goes to LISTENING and back on its own (seen 10 s
	// after the master started, before it was stopped).
	find := func(from, to string, after int64) (record.Record, bool) {
		for _, r := range all {
			if r.Measurement == "ptp4l_port_event" && r.TimeNS >= after && fieldString(r, "from_state") == from && fieldString(r, "state") == to {
				return r, true
			}
		}
		return record.Record{}, false
	}
	// state is the port's state after the last port event read.
	state := func() string {
		var last record.Record
		for _, r := range all {
			if r.Measurement == "ptp4l_port_event" && r.TimeNS >= last.TimeNS {
				last = r
			}
		}
		return fieldString(last, "state")
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(500 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %s within 30 s\n%s", what, slave.LogText())
			}
			collectAll()
		}
	}
	// Subscribed (the baseline: LISTENING): waited for, not assumed 1 s on.
	wait("the subscription", func() bool {
		for _, s := range srcs {
			if n, _ := fieldInt(record.Record{Fields: s.(collect.SelfReporter).SelfFields()}, "subscriptions"); s.Name() == "ptp4l_push" && n >= 1 {
				return true
			}
		}
		return false
	})
	start, _ := timebase.Realtime.Now()
	master := testbed.StartPtp4l(t, hosts[0], testbed.Ptp4lOptions{Master: true})
	wait("LISTENING to UNCALIBRATED", func() bool { _, ok := find("LISTENING", "UNCALIBRATED", start); return ok })
	nsync := func() (n int) {
		for _, r := range all {
			if _, ok := fieldInt(r, "offset_ns"); ok && r.Measurement == "ptp4l_sync" {
				n++
			}
		}
		return n
	}
	// The master is stopped with the port UNCALIBRATED (not in a spell of
	// LISTENING of its own), so that it is the stop that ends it.
	wait("5 ptp4l_sync records with an offset and the port UNCALIBRATED", func() bool { return nsync() >= 5 && state() == "UNCALIBRATED" })
	stopped, _ := timebase.Realtime.Now()
	master.Stop()
	wait("UNCALIBRATED to LISTENING", func() bool { _, ok := find("UNCALIBRATED", "LISTENING", stopped); return ok })
	end, _ := timebase.Realtime.Now()
	collectAll()
	checkRecordRules(t, all)
	up, _ := find("LISTENING", "UNCALIBRATED", start)
	down, _ := find("UNCALIBRATED", "LISTENING", stopped)
	if up.TimeNS < start || up.TimeNS > stopped || down.TimeNS < stopped || down.TimeNS > end {
		t.Errorf("port events at %d and %d, want within [%d, %d] and [%d, %d]", up.TimeNS, down.TimeNS, start, stopped, stopped, end)
	}
	// The announce receipt timeout: 3 announce intervals of 1 s after the
	// last Announce, which came at most an interval before the last Sync
	// (its t2: the slave's receive stamp, which no scheduling delays). It
	// was timed from the test's reading just before the stop, but a master
	// starved beside other work sent its last Announce well before that.
	// At most 10 s after the stop leaves a loaded slave time to notice (it
	// was 5 s).
	var lastSync int64
	for _, r := range all {
		if t2, ok := fieldInt(r, "t2_ns"); ok && r.Measurement == "ptp4l_sync" && t2 <= stopped {
			lastSync = max(lastSync, t2)
		}
	}
	if d := time.Duration(down.TimeNS - lastSync); d < 2*time.Second || down.TimeNS-stopped > int64(10*time.Second) {
		t.Errorf("UNCALIBRATED to LISTENING %v after the last Sync, %v after the master stopped; want its announce timeout",
			d, time.Duration(down.TimeNS-stopped))
	}
	for _, r := range all {
		if r.Measurement != "ptp4l_sync" {
			continue
		}
		t2, _ := fieldInt(r, "t2_ns")
		if r.TimeNS != t2 || t2 < start || t2 > end {
			t.Errorf("ptp4l_sync at %d, t2 %d: want t2, within the run", r.TimeNS, t2)
		}
	}
	self := map[string]record.Record{}
	for _, s := range srcs {
		self[s.Name()] = record.Record{Fields: s.(collect.SelfReporter).SelfFields()}
	}
	if n, _ := fieldInt(self["ptp4l_push"], "notifications"); n < 2 {
		t.Errorf("push self-metrics: %v", self["ptp4l_push"].Fields)
	}
	if n, _ := fieldInt(self["ptp4l_slave_events"], "syncs"); n < 5 {
		t.Errorf("event monitor self-metrics: %v", self["ptp4l_slave_events"].Fields)
	}
	t.Logf("port events %s → %s at +%v after the master started, %s → %s %v after it stopped; %d ptp4l_sync with an offset",
		fieldString(up, "from_state"), fieldString(up, "state"), time.Duration(up.TimeNS-start),
		fieldString(down, "from_state"), fieldString(down, "state"), time.Duration(down.TimeNS-stopped), nsync())
}

// TestPtp4lSubscriptionRefusedIsSaidOnce: a ptp4l that refuses
// SUBSCRIBE_EVENTS_NP (linuxptp 4.x's read-only socket) is one error, at
// the first collection after it, and subscription_refused; the push source
// asks no more, while the ptp4l source polls as before.
func TestPtp4lSubscriptionRefusedIsSaidOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ptp4l")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	asked := make(chan struct{}, 16)
	go func() {
		var buf [1500]byte
		for {
			n, from, err := c.ReadFromUnix(buf[:])
			if err != nil {
				return
			}
			req := buf[:n]
			hs := binary.Size(protocol.ManagementMsgHead{})
			if n < hs+6 || protocol.ManagementID(binary.BigEndian.Uint16(req[hs+4:])) != ptp.IDSubscribeEventsNP {
				continue
			}
			asked <- struct{}{}
			var head protocol.ManagementMsgHead
			binary.Read(bytes.NewReader(req), binary.BigEndian, &head)
			head.TargetPortIdentity, head.ActionField = head.SourcePortIdentity, protocol.RESPONSE
			head.MessageLength = uint16(hs + 12)
			var b bytes.Buffer
			binary.Write(&b, binary.BigEndian, head)
			binary.Write(&b, binary.BigEndian, [6]uint16{uint16(protocol.TLVManagementErrorStatus), 8, uint16(protocol.ErrorNotSupported), uint16(ptp.IDSubscribeEventsNP)})
			c.WriteToUnix(b.Bytes(), from)
		}
	}()
	d := Default()
	cfg := *d.PTP.Ptp4l.First()
	cfg.Socket = path
	s, err := collect.Decode("ptp4l_push", time.Second, 0, newPtp4lPush(cfg, ""))
	if err != nil {
		t.Fatal(err)
	}
	s.SetMaxBackoff(50 * time.Millisecond)
	runFor(t, s)
	<-asked
	var errs []error
	for range 5 {
		time.Sleep(300 * time.Millisecond)
		if err := s.Collect(context.Background(), &collect.Batch{}); err != nil && !errors.Is(err, collect.ErrNoData) {
			errs = append(errs, err)
		}
	}
	if len(errs) != 1 || !errors.Is(errs[0], ptp.ErrSubscriptionRefused) || !strings.Contains(errs[0].Error(), "NOT_SUPPORTED") ||
		!strings.Contains(errs[0].Error(), "polled") {
		t.Fatalf("errors over 5 collections: %v, want the refusal once", errs)
	}
	if len(asked) != 0 {
		t.Errorf("asked %d more times after the refusal", len(asked))
	}
	self := record.Record{Fields: s.SelfFields()}
	for _, f := range self.Fields {
		if f.Key == "subscription_refused" && (f.Kind != record.KindBool || f.I == 0) {
			t.Errorf("subscription_refused %+v", f)
		}
	}
	t.Logf("said once: %v", errs[0])
}

// TestSlaveEventMonitorPathInUseIsRefusedAtStart: a path another monagent
// (or anything) is bound to refuses the start, naming the key; a stale
// socket left by a killed monagent is taken over.
func TestSlaveEventMonitorPathInUseIsRefusedAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events")
	other, err := ptp.ListenSlaveEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	c := Default()
	c.PTP.Enabled, c.PTP.Ptp4l.First().Enabled, c.PTP.Ptp4l.First().Socket, c.PTP.Ptp4l.First().EventMonitor = true, true, filepath.Join(dir, "ptp4l"), path
	c.PTP.Ptp4l.First().Subscribe = false
	build := func() ([]collect.Source, error) {
		return buildPtp4lSource(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: timebase.NewTranslators()})
	}
	_, err = build()
	if err == nil || !strings.Contains(err.Error(), "ptp.ptp4l.event_monitor") || !strings.Contains(err.Error(), ptp.ErrSocketInUse.Error()) {
		t.Fatalf("path in use: %v", err)
	}
	// A socket nobody reads: the one left by a process that died.
	stale, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "stale"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	stale.Close() // a UnixConn leaves its path
	other.Close()
	c.PTP.Ptp4l.First().EventMonitor = filepath.Join(dir, "stale")
	srcs, err := build()
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	for _, s := range srcs {
		s.Close()
	}
}
