package ptp

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

func golden(t testing.TB, name string) []byte {
	t.Helper()
	s, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(s)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSlaveEventMonitorGoldenVectors: the two datagrams ptp4l 3.1.1's slave
// event monitor sent (testdata/README.md) decode to what it used.
func TestSlaveEventMonitorGoldenVectors(t *testing.T) {
	master := protocol.PortIdentity{ClockIdentity: 0xae3849fffe59beea, PortNumber: 1}
	for _, c := range []struct {
		file string
		want SlaveTiming
	}{
		{"slave_rx_sync_timing_ptp4l311.hex", SlaveTiming{Kind: SlaveSync, Master: master, Seq: 2,
			TxNS: 0x6b06a697*1e9 + 0x2c96cf03, RxNS: 0x6b06a697*1e9 + 0x2c972dff}},
		{"slave_delay_timing_ptp4l311.hex", SlaveTiming{Kind: SlaveDelay, Master: master, Seq: 0,
			TxNS: 0x6b06a698*1e9 + 0x249098d1, RxNS: 0x6b06a698*1e9 + 0x2490e2ad}},
	} {
		got, unknown, err := DecodeSlaveEvents(golden(t, c.file), nil)
		if err != nil || unknown != 0 || len(got) != 1 || got[0] != c.want {
			t.Errorf("%s: %+v (%d unknown, %v), want %+v", c.file, got, unknown, err, c.want)
		}
	}
	// Two records in one TLV (RECORDS_PER_MESSAGE is 1 in linuxptp, the
	// format allows more), then a TLV of another type, skipped.
	b := golden(t, "slave_rx_sync_timing_ptp4l311.hex")
	rec := b[len(b)-slaveSyncRecord:]
	b = append(b, rec...)
	b = append(b, 0x00, 0x03, 0x00, 0x02, 0xaa, 0xbb) // an ORGANIZATION_EXTENSION-like TLV
	binary.BigEndian.PutUint16(b[signalingHeadSize+2:], uint16(10+2*slaveSyncRecord))
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)))
	got, unknown, err := DecodeSlaveEvents(b, nil)
	if err != nil || unknown != 1 || len(got) != 2 || got[0] != got[1] {
		t.Errorf("two records and a foreign TLV: %+v, %d unknown, %v", got, unknown, err)
	}
	// Broken ones are errors, never a panic or a record.
	for name, bad := range map[string][]byte{
		"short":      b[:20],
		"management": golden(t, "port_state_notification_ptp4l311.hex"),
		"length":     append([]byte{0x0c, 0x02, 0x01, 0x00}, make([]byte, 60)...),
		"partial":    golden(t, "slave_delay_timing_ptp4l311.hex")[:80],
		"record length": func() []byte {
			c := bytes.Clone(golden(t, "slave_delay_timing_ptp4l311.hex"))
			c[signalingHeadSize+3]--
			return c
		}(),
	} {
		if got, _, err := DecodeSlaveEvents(bad, nil); err == nil || len(got) != 0 {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
	sync := golden(t, "slave_rx_sync_timing_ptp4l311.hex")
	buf := make([]SlaveTiming, 0, 4)
	if a := testing.AllocsPerRun(100, func() { DecodeSlaveEvents(sync, buf[:0]) }); a != 0 {
		t.Errorf("%v allocations per datagram", a)
	}
}

// TestSlaveEventMonitorOffsetsAsPtp4l: the moving median and the offsets,
// worked by hand as linuxptp's mmedian.c and tsproc.c compute them.
func TestSlaveEventMonitorOffsetsAsPtp4l(t *testing.T) {
	o := NewOffsets(4)
	m := protocol.PortIdentity{ClockIdentity: 1, PortNumber: 1}
	sync := func(t1, c, t2 int64) (int64, int64, bool) {
		return o.Sync(&SlaveTiming{Kind: SlaveSync, Master: m, TxNS: t1, CorrectionNS: c, RxNS: t2})
	}
	delay := func(t3, c, t4 int64) (int64, int64, bool) {
		return o.Delay(&SlaveTiming{Kind: SlaveDelay, Master: m, TxNS: t3, CorrectionNS: c, RxNS: t4})
	}
	if _, _, ok := delay(10, 0, 20); ok {
		t.Fatal("a delay before any Sync")
	}
	if _, _, ok := sync(1000, 5, 1100); ok { // t1c = 1005, t2 = 1100
		t.Fatal("an offset before any delay")
	}
	// raw = ((t2 − t3) + (t4 − c3 − t1c)) / 2, truncated toward zero.
	// raw = ((t2 − t3) + (t4 − c3 − t1c)) / 2, truncated toward zero as C.
	for i, c := range []struct{ t3, c3, t4, raw int64 }{
		{1200, 0, 1150, 22},  // (−100 + 145) / 2 = 22
		{1200, 10, 1170, 27}, // (−100 + 155) / 2 = 27
		{1200, 0, 1100, -2},  // (−100 + 95) / 2 = −2 (−2.5 truncated)
		{1200, -3, 1000, -51},
	} {
		if raw, _, ok := delay(c.t3, c.c3, c.t4); !ok || raw != c.raw {
			t.Fatalf("delay %d: raw %d (%v), want %d", i, raw, ok, c.raw)
		}
	}
	// The median of the last four, against a sort.
	o2 := NewOffsets(4)
	o2.Sync(&SlaveTiming{Master: m, TxNS: 0, RxNS: 0})
	var window []int64
	for i, raw := range []int64{20, 27, -2, 97, 98, -51, 5, 5, 1_000_000, -7} {
		// t2 = t1c = 0, t3 = 0: raw = t4 / 2 with t4 = 2·raw.
		_, filtered, _ := o2.Delay(&SlaveTiming{Master: m, TxNS: 0, RxNS: 2 * raw})
		window = append(window, raw)
		if len(window) > 4 {
			window = window[1:]
		}
		s := append([]int64(nil), window...)
		for a := range s {
			for b := a + 1; b < len(s); b++ {
				if s[b] < s[a] {
					s[a], s[b] = s[b], s[a]
				}
			}
		}
		want := s[len(s)/2]
		if len(s)%2 == 0 {
			want = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		if filtered != want {
			t.Errorf("sample %d (%d): filtered %d, want %d of %v", i, raw, filtered, want, window)
		}
	}
	// offset = t2 − t1 − c1 − filtered delay.
	off, d, ok := o2.Sync(&SlaveTiming{Master: m, TxNS: 5000, CorrectionNS: 7, RxNS: 6000})
	if want := int64(6000 - 5000 - 7 - d); !ok || off != want {
		t.Errorf("offset %d (%v), want %d", off, ok, want)
	}
	// A new master starts over, as ptp4l's tsproc_reset.
	if _, _, ok := o2.Sync(&SlaveTiming{Master: protocol.PortIdentity{ClockIdentity: 2}, TxNS: 1, RxNS: 2}); ok {
		t.Error("an offset from the old master's delays")
	}
}

// fakePtp4l answers management requests on a Unix datagram socket with
// answer(request) (nil: none) until the test ends.
func fakePtp4l(t *testing.T, answer func(c *net.UnixConn, from *net.UnixAddr, req []byte)) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ptp4l")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		var buf [1500]byte
		for {
			n, from, err := c.ReadFromUnix(buf[:])
			if err != nil {
				return
			}
			answer(c, from, bytes.Clone(buf[:n]))
		}
	}()
	t.Cleanup(func() { c.Close(); <-done })
	return path
}

// answerTo builds a management message as ptp4l does (action RESPONSE)
// to req's asker with the request's sequence id, or seq when given.
func answerTo(req []byte, seq int, tlv []byte) []byte {
	var head protocol.ManagementMsgHead
	binary.Read(bytes.NewReader(req), binary.BigEndian, &head)
	head.TargetPortIdentity = head.SourcePortIdentity
	head.SourcePortIdentity = protocol.PortIdentity{ClockIdentity: 0x42, PortNumber: 1}
	head.ActionField = protocol.RESPONSE
	if seq >= 0 {
		head.SequenceID = uint16(seq)
	}
	head.MessageLength = uint16(binary.Size(head) + len(tlv))
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, head)
	b.Write(tlv)
	return b.Bytes()
}

func reqID(req []byte) protocol.ManagementID {
	return protocol.ManagementID(binary.BigEndian.Uint16(req[binary.Size(protocol.ManagementMsgHead{})+4:]))
}

// TestSubscriberRefusedByPtp4l: a ptp4l answering SUBSCRIBE_EVENTS_NP with
// an error status (linuxptp 4.x's read-only socket answers NOT_SUPPORTED) is
// ErrSubscriptionRefused, naming the error; one that does not answer is an
// error within the timeout.
func TestSubscriberRefusedByPtp4l(t *testing.T) {
	sock := fakePtp4l(t, func(c *net.UnixConn, from *net.UnixAddr, req []byte) {
		if reqID(req) != IDSubscribeEventsNP {
			return
		}
		var tlv [12]byte // as linuxptp's port_management_error: length 8, 4 reserved
		binary.BigEndian.PutUint16(tlv[0:], uint16(protocol.TLVManagementErrorStatus))
		binary.BigEndian.PutUint16(tlv[2:], 8)
		binary.BigEndian.PutUint16(tlv[4:], uint16(protocol.ErrorNotSupported))
		binary.BigEndian.PutUint16(tlv[6:], uint16(IDSubscribeEventsNP))
		c.WriteToUnix(answerTo(req, -1, tlv[:]), from)
	})
	s := NewSubscriber(sock, SubscribeConfig{})
	err := s.Run(t.Context(), func(*Notification) { t.Error("a notification from a refusal") })
	if !errors.Is(err, ErrSubscriptionRefused) || !strings.Contains(err.Error(), "NOT_SUPPORTED") {
		t.Fatalf("refused: %v", err)
	}
	if _, err := os.Stat(s.LocalSocket()); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	silent := fakePtp4l(t, func(*net.UnixConn, *net.UnixAddr, []byte) {})
	start := time.Now()
	err = NewSubscriber(silent, SubscribeConfig{Timeout: 200 * time.Millisecond}).Run(t.Context(), func(*Notification) {})
	if err == nil || errors.Is(err, ErrSubscriptionRefused) || time.Since(start) > 2*time.Second {
		t.Fatalf("silent ptp4l: %v after %v", err, time.Since(start))
	}
}

// TestSubscriberDecodesPushes: what a linuxptp 4.x pushes — PORT_DATA_SET
// (ptp4l 3.1.1's golden notification), TIME_STATUS_NP — is handed over
// decoded, the GET's answer as the baseline; a gap in ptp4l's sequence
// numbers is counted as lost; the subscription is renewed.
func TestSubscribePushesDecoded(t *testing.T) {
	port := golden(t, "port_state_notification_ptp4l311.hex")
	head := binary.Size(protocol.ManagementMsgHead{})
	sock := fakePtp4l(t, func(c *net.UnixConn, from *net.UnixAddr, req []byte) {
		switch reqID(req) {
		case IDSubscribeEventsNP:
			c.WriteToUnix(answerTo(req, -1, req[head:]), from) // ptp4l echoes the dataset
			if binary.BigEndian.Uint16(req[head+6:]) == 0 {
				return // an empty mask: the end
			}
			// Pushes with ptp4l's own numbering: 0, 1, then 3 (2 lost).
			c.WriteToUnix(answerTo(req, 0, port[head:]), from)
			ts := protocol.TimeStatusNPTLV{ManagementTLVHead: protocol.ManagementTLVHead{
				TLVHead: protocol.TLVHead{TLVType: protocol.TLVManagement, LengthField: 2 + 50}, ManagementID: IDTimeStatusNP},
				MasterOffsetNS: -1234, IngressTimeNS: 1_700_000_000_000_000_000, GMPresent: 1, GMIdentity: 0x42}
			var b bytes.Buffer
			binary.Write(&b, binary.BigEndian, ts)
			c.WriteToUnix(answerTo(req, 1, b.Bytes()), from)
			c.WriteToUnix(answerTo(req, 3, port[head:]), from)
		case protocol.IDPortDataSet:
			c.WriteToUnix(answerTo(req, -1, port[head:]), from)
		}
	})
	s := NewSubscriber(sock, SubscribeConfig{Duration: 2 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond) // past the first renewal at 1 s
	defer cancel()
	var got []Notification
	if err := s.Run(ctx, func(n *Notification) { got = append(got, *n) }); err != nil {
		t.Fatal(err)
	}
	var baseline, ports, times int
	for _, n := range got {
		switch {
		case n.Baseline:
			baseline++
		case n.ID == protocol.IDPortDataSet:
			ports++
			if n.Port.PortState != protocol.PortStateUncalibrated || n.Port.PortIdentity.PortNumber != 1 {
				t.Errorf("port: %+v", n.Port)
			}
		case n.ID == IDTimeStatusNP:
			times++
			if n.TimeStatus.MasterOffsetNS != -1234 || n.TimeStatus.GMPresent != 1 {
				t.Errorf("time status: %+v", n.TimeStatus)
			}
		}
		if n.ReadNS < 1e18 {
			t.Errorf("read at %d: not REALTIME", n.ReadNS)
		}
	}
	// Two subscriptions (the first, the renewal), each followed by three
	// pushes; the baseline once.
	if baseline != 1 || ports != 4 || times != 2 || s.Subscriptions.Load() != 2 {
		t.Errorf("baseline %d, port pushes %d, time pushes %d, subscriptions %d", baseline, ports, times, s.Subscriptions.Load())
	}
	// 0 1 3 | 0 1 3: 2 lost each time; the jump back from 3 to 0 is a new
	// numbering, not a loss.
	if s.Lost.Load() != 2 {
		t.Errorf("lost %d, want 2", s.Lost.Load())
	}
}

func FuzzDecodeSlaveEvents(f *testing.F) {
	f.Add(golden(f, "slave_rx_sync_timing_ptp4l311.hex"))
	f.Add(golden(f, "slave_delay_timing_ptp4l311.hex"))
	f.Add(golden(f, "port_state_notification_ptp4l311.hex"))
	buf := make([]SlaveTiming, 0, 64)
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, unknown, err := DecodeSlaveEvents(b, buf[:0])
		if err != nil && len(recs) != 0 && unknown < 0 {
			t.Fatal("impossible")
		}
		for _, r := range recs {
			if r.Kind != SlaveSync && r.Kind != SlaveDelay || r.TxNS < 0 || r.RxNS < 0 {
				t.Fatalf("record %+v", r)
			}
		}
		o := NewOffsets(DefaultDelayFilterLength)
		for i := range recs {
			if recs[i].Kind == SlaveSync {
				o.Sync(&recs[i])
			} else {
				o.Delay(&recs[i])
			}
		}
	})
}

func FuzzDecodeNotification(f *testing.F) {
	f.Add(golden(f, "port_state_notification_ptp4l311.hex"))
	f.Add(golden(f, "port_data_set_ptp4l311.hex"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, id := range []protocol.ManagementID{protocol.IDPortDataSet, IDTimeStatusNP, protocol.IDParentDataSet} {
			n := Notification{ID: id}
			decodeNotification(b, &n)
		}
	})
}

// TestSlaveEventMonitorSocketPath: monagent takes over a stale socket (a
// killed monagent's), refuses one another process is bound to
// (ErrSocketInUse), removes nothing that is not a socket, and leaves no
// path behind when closed.
func TestSlaveEventMonitorSocketPath(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events")
	l, err := ListenSlaveEvents(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListenSlaveEvents(path); !errors.Is(err, ErrSocketInUse) {
		t.Errorf("bound twice: %v", err)
	}
	l.conn.Close() // killed: the path stays, nobody is bound
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	l2, err := ListenSlaveEvents(path)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l2.Close()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("closed, the path is still there: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, []byte("keep"), 0o644)
	if _, err := ListenSlaveEvents(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Error("the file was touched")
	}
}

// TestSlaveEventMonitorSocketMode: the socket is 0600 from the bind on,
// however loose the umask (a fresh path and a stale one taken over): no
// other user can send records into monagent's series. Its owner (ptp4l runs
// as root, which passes any mode) still can. Before, it was 0777 less the
// umask: 0755 under systemd's default, writable by anyone under 0.
func TestSlaveEventMonitorSocketMode(t *testing.T) {
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "events")
	for _, take := range []string{"fresh", "stale"} {
		l, err := ListenSlaveEvents(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: socket mode %v, want -rw-------", take, m)
		}
		c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
		if err != nil {
			t.Fatalf("%s: its owner cannot send: %v", take, err)
		}
		if _, err := c.Write([]byte("x")); err != nil {
			t.Errorf("%s: its owner cannot send: %v", take, err)
		}
		c.Close()
		l.conn.Close() // killed: the path stays for the next round
	}
	os.Remove(path)
}
