package ptp

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

// fakeMaster is a two-step PTP master over UDPv4 multicast at 4 Hz with
// kernel timestamps, which leaves one Delay_Req unanswered: the dropAt-th.
type fakeMaster struct {
	tx, ev   *sockts.Conn
	delayReq atomic.Uint64 // Delay_Reqs received
	answered atomic.Uint64
	dropped  atomic.Uint64
	dropAt   uint64
}

// logSync is the fake master's Sync interval, log2 s (4 Hz).
const fakeLogSync = -2

func startFakeMaster(t *testing.T, h *testbed.Host, dropAt uint64) *fakeMaster {
	m := &fakeMaster{dropAt: dropAt}
	if err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.If)
		if err != nil {
			return err
		}
		if m.ev, err = sockts.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), EventPort), sockts.Options{ReuseAddr: true}); err != nil {
			return err
		}
		if err := m.ev.JoinGroup(DefaultGroup, ifi.Index); err != nil {
			return err
		}
		if m.tx, err = sockts.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), sockts.Options{}); err != nil {
			return err
		}
		return m.tx.SendMulticast(ifi.Index)
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.ev.Close(); m.tx.Close() })
	return m
}

// interval sets a message's logMessageInterval.
func interval(b []byte, log int8) []byte {
	b[33] = byte(log)
	return b
}

// run sends Announce, Sync and Follow_Up and answers Delay_Reqs until ctx is
// done. Only this goroutine sends.
func (m *fakeMaster) run(ctx context.Context, t *testing.T) {
	event := netip.AddrPortFrom(DefaultGroup, EventPort)
	general := netip.AddrPortFrom(DefaultGroup, GeneralPort)
	period := logInterval(fakeLogSync)
	tick := time.NewTicker(period)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	type req struct {
		seq  uint16
		from protocol.PortIdentity
		t4   int64
	}
	reqs := make(chan req, 16)
	wg.Add(1)
	go func() { // reads the Delay_Reqs and their receive timestamps
		defer wg.Done()
		buf := make([]byte, 1500)
		for ctx.Err() == nil {
			n, _, ts, err := m.ev.ReadFrom(buf, 50*time.Millisecond)
			if err != nil || n < headerSize || protocol.MessageType(buf[0]&0x0f) != protocol.MessageDelayReq {
				continue
			}
			r := req{seq: binary.BigEndian.Uint16(buf[30:]), t4: ts.NS}
			r.from.ClockIdentity = protocol.ClockIdentity(binary.BigEndian.Uint64(buf[20:]))
			r.from.PortNumber = binary.BigEndian.Uint16(buf[28:])
			select {
			case reqs <- r:
			case <-ctx.Done():
			}
		}
	}()
	send := func(b []byte, to netip.AddrPort) sockts.Timestamp {
		ts, err := m.tx.WriteTo(b, to)
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("fake master: %v", err)
		}
		return ts
	}
	for seq := uint16(1); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case r := <-reqs:
			if m.delayReq.Add(1) == m.dropAt {
				m.dropped.Add(1)
				continue
			}
			send(interval(delayResp(gm, r.seq, r.from, r.t4, 0), fakeLogSync), general)
			m.answered.Add(1)
		case <-tick.C:
			if seq%4 == 1 {
				send(interval(announce(gm, 128), 1), general)
			}
			t1 := send(interval(syncMsg(gm, seq, true, 0, 0), fakeLogSync), event)
			send(interval(followUp(gm, seq, t1.NS, 0), fakeLogSync), general)
		}
	}
}

// TestProbeRecoversFromALostDelayResp: a master that leaves one Delay_Req
// unanswered. The probe abandons it after its timeout (counted once), sends
// Delay_Reqs again, and its exchanges go on with fresh path delays. (Before,
// it sent no Delay_Req ever again and measured with a stale delay.)
func TestProbeRecoversFromALostDelayResp(t *testing.T) {
	needKernelTimestamps(t)
	master, host := testbed.NewLink(t)
	const dropAt = 3
	m := startFakeMaster(t, master, dropAt)
	var p *Probe
	if err := host.Do(func() (err error) {
		p, err = ListenUDP(UDPConfig{Interface: host.If})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Add(2)
	go func() { defer wg.Done(); m.run(ctx, t) }()
	out := make(chan Exchange, 1024)
	go func() {
		defer wg.Done()
		p.Run(ctx, func(ex *Exchange) {
			select {
			case out <- *ex:
			default:
				t.Error("the test could not keep up")
			}
		})
	}()
	// Exchanges until the master has answered well after the drop.
	after := uint64(dropAt + 8)
	var exs []Exchange
	for m.answered.Load() < after {
		select {
		case ex := <-out:
			exs = append(exs, ex)
		case <-ctx.Done():
			t.Fatalf("the master answered %d Delay_Reqs of %d, dropped %d; probe stats %+v", m.answered.Load(), m.delayReq.Load(), m.dropped.Load(), p.Stats())
		}
	}
	time.Sleep(2 * logInterval(fakeLogSync)) // the last answer's Sync
	for len(out) > 0 {
		exs = append(exs, <-out)
	}
	st := p.Stats()
	if m.dropped.Load() != 1 || st.DelayTimeouts != 1 || st.DelayNoT3 != 0 {
		t.Errorf("master dropped %d delay_resps; probe counted %d timeouts, %d without t3", m.dropped.Load(), st.DelayTimeouts, st.DelayNoT3)
	}
	// Path delays from Delay_Reqs after the drop were used: the exchanges'
	// t3 took at least as many distinct values as answers came after it.
	t3s := map[int64]bool{}
	for _, ex := range exs {
		t3s[ex.T3] = true
	}
	// Each answer is used unless its Delay_Resp or a neighbouring message was
	// refused on its own (a Follow_Up late past the next Sync on a loaded
	// machine: counted as a sequence reject), and the last may not have had
	// its Sync yet.
	if got, want := len(t3s), int(m.answered.Load())-1-int(st.Rejects[RejectSequence]); got < want {
		t.Errorf("exchanges used %d distinct Delay_Reqs of %d answered (%d sequence rejects)", got, m.answered.Load(), st.Rejects[RejectSequence])
	}
	t.Logf("%d exchanges; master: %d delay_reqs, %d answered, %d dropped; probe: %d timeouts, rejects %v, %d distinct t3",
		len(exs), m.delayReq.Load(), m.answered.Load(), m.dropped.Load(), st.DelayTimeouts, st.Rejects, len(t3s))
}
