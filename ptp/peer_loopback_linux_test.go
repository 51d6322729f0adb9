package ptp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/facebook/time/ptp/protocol"
	"github.com/mdlayher/packet"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
)

// The loopback tests run the probe against a PTP master of their own, written
// here, with kernel software timestamps at both ends and no ptp4l and no `ip`
// (the namespace they use, when they can, is made with unshare(2)): they run
// as they are in the QEMU guest. Master and probe share one clock, so the
// true offset is 0.

// loopDomain keeps the loopback master apart from any real PTP traffic the
// probe's interface may see (domain 0 is the default profile's).
const loopDomain = 42

// loopLogSync is the loopback master's Sync interval, log2 s (8 Hz).
const loopLogSync = -3

// loopExchanges is how many exchanges each loopback test takes.
const loopExchanges = 12

// loopGM is the loopback master's port identity.
var loopGM = protocol.PortIdentity{ClockIdentity: 0x02aabbfffeccdd01, PortNumber: 1}

// loopMaster is a two-step PTP master with kernel timestamps on one transport:
// Announce every second, Sync and its Follow_Up (carrying the Sync's kernel
// transmit timestamp) every loopLogSync, and a Delay_Resp (carrying the
// Delay_Req's kernel receive timestamp) to every Delay_Req in its domain.
type loopMaster struct {
	// send sends an event (Sync) or general message and returns its
	// transmit timestamp; only run's goroutine calls it.
	send func(b []byte, general bool) (sockts.Timestamp, error)
	// recv reads the next PTP message (the payload of an L2 frame) with its
	// receive timestamp; only run's reader goroutine calls it.
	recv func(buf []byte, timeout time.Duration) ([]byte, sockts.Timestamp, error)

	syncs, delayReqs, answered atomic.Uint64
	syncTx, delayRx            [4]atomic.Uint64 // timestamp sources (by sockts.Source)
}

// loopHeader is the header of a message of the loopback master.
func loopHeader(typ protocol.MessageType, seq uint16, length uint16, control uint8, logInterval int8) protocol.Header {
	return protocol.Header{
		SdoIDAndMsgType:    protocol.NewSdoIDAndMsgType(typ, 0),
		Version:            protocol.Version,
		MessageLength:      length,
		DomainNumber:       loopDomain,
		SourcePortIdentity: loopGM,
		SequenceID:         seq,
		ControlField:       control,
		LogMessageInterval: protocol.LogInterval(logInterval),
	}
}

func mustMarshal(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// run serves until ctx is done; it returns when its reader has ended too.
func (m *loopMaster) run(ctx context.Context, t *testing.T) {
	type req struct {
		seq  uint16
		from protocol.PortIdentity
		t4   int64
	}
	reqs := make(chan req, 16)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { // reads the Delay_Reqs with their receive timestamps
		defer wg.Done()
		buf := make([]byte, 1536)
		for ctx.Err() == nil {
			b, ts, err := m.recv(buf, 50*time.Millisecond)
			// Everything else (over L2 on lo: the master's own frames, looped
			// back) is not for the master.
			if err != nil || len(b) < headerSize || protocol.MessageType(b[0]&0x0f) != protocol.MessageDelayReq || b[4] != loopDomain {
				continue
			}
			m.delayReqs.Add(1)
			m.delayRx[ts.Source].Add(1)
			r := req{seq: binary.BigEndian.Uint16(b[30:]), t4: ts.NS}
			r.from.ClockIdentity = protocol.ClockIdentity(binary.BigEndian.Uint64(b[20:]))
			r.from.PortNumber = binary.BigEndian.Uint16(b[28:])
			select {
			case reqs <- r:
			case <-ctx.Done():
			}
		}
	}()
	send := func(b []byte, general bool) sockts.Timestamp {
		ts, err := m.send(b, general)
		if err != nil {
			t.Errorf("loopback master: %v", err)
		}
		return ts
	}
	announce := mustMarshal((&protocol.Announce{
		Header: loopHeader(protocol.MessageAnnounce, 0, 64, 5, 0),
		AnnounceBody: protocol.AnnounceBody{
			GrandmasterPriority1: 128, GrandmasterPriority2: 128, GrandmasterIdentity: loopGM.ClockIdentity,
			GrandmasterClockQuality: protocol.ClockQuality{ClockClass: 6, ClockAccuracy: 0x21, OffsetScaledLogVariance: 0x4e5d},
			TimeSource:              protocol.TimeSourceInternalOscillator,
		}}).MarshalBinary())
	// The first Announce goes out a Sync interval before the first Sync, so
	// the probe knows the master when it comes (the two arrive on different
	// sockets over UDP, read by two goroutines, in either order).
	var announces uint16
	sendAnnounce := func() {
		binary.BigEndian.PutUint16(announce[30:], announces)
		announces++
		send(announce, true)
	}
	sendAnnounce()
	tick := time.NewTicker(logInterval(loopLogSync))
	defer tick.Stop()
	for seq := uint16(0); ; {
		select {
		case <-ctx.Done():
			return
		case r := <-reqs:
			resp := protocol.DelayResp{Header: loopHeader(protocol.MessageDelayResp, r.seq, 54, 3, loopLogSync),
				DelayRespBody: protocol.DelayRespBody{ReceiveTimestamp: ptpTS(r.t4), RequestingPortIdentity: r.from}}
			send(mustMarshal(resp.MarshalBinary()), true)
			m.answered.Add(1)
		case <-tick.C:
			seq++
			if seq%(1<<-loopLogSync) == 0 { // every second
				sendAnnounce()
			}
			sm := protocol.SyncDelayReq{Header: loopHeader(protocol.MessageSync, seq, 44, 0, loopLogSync)}
			sm.FlagField = flagTwoStep
			t1 := send(mustMarshal(sm.MarshalBinary()), false)
			m.syncs.Add(1)
			m.syncTx[t1.Source].Add(1)
			fu := protocol.FollowUp{Header: loopHeader(protocol.MessageFollowUp, seq, 44, 2, loopLogSync),
				FollowUpBody: protocol.FollowUpBody{PreciseOriginTimestamp: ptpTS(t1.NS)}}
			send(mustMarshal(fu.MarshalBinary()), true)
		}
	}
}

// measureLoopback runs p against m until loopExchanges exchanges came (or a
// time limit), stops both, and checks what the probe measured.
func measureLoopback(t *testing.T, p *Probe, m *loopMaster) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel: every goroutine has ended when this returns
	defer cancel()
	out := make(chan Exchange, 1024)
	wg.Add(2)
	go func() { defer wg.Done(); m.run(ctx, t) }()
	go func() {
		defer wg.Done()
		if err := p.Run(ctx, func(ex *Exchange) {
			select {
			case out <- *ex:
			default:
				t.Error("the test could not keep up")
			}
		}); err != nil {
			t.Errorf("probe: %v", err)
		}
	}()
	start := time.Now()
	var exs []Exchange
	for len(exs) < loopExchanges && ctx.Err() == nil {
		select {
		case ex := <-out:
			exs = append(exs, ex)
		case <-ctx.Done():
		}
	}
	took := time.Since(start)
	cancel()
	wg.Wait()
	st := p.Stats()
	for i, ex := range exs {
		t.Logf("  exchange %2d: seq %3d offset %7d ns path delay %6d ns (t2-t1 %6d ns, t4-t3 %6d ns), sources %v/%v",
			i, ex.Seq, ex.OffsetNS, ex.PathDelayNS, ex.T2-ex.T1, ex.T4-ex.T3, ex.SyncSource, ex.DelaySource)
	}
	t.Logf("%s: %d exchanges in %v; master: %d syncs (tx stamps %v), %d delay_reqs (rx stamps %v), %d answered",
		p.Transport, len(exs), took.Round(time.Millisecond), m.syncs.Load(), sources(&m.syncTx), m.delayReqs.Load(), sources(&m.delayRx), m.answered.Load())
	t.Logf("probe: rejects %v, delay timeouts %d, no t3 %d, send errors %d, read errors %d, untranslated %d, dropped %d, rx stamps %v, tx stamps %v",
		st.Rejects, st.DelayTimeouts, st.DelayNoT3, p.SendErrors.Load(), p.ReadErrors.Load(), p.Untranslated.Load(), p.Dropped.Load(),
		sources(&p.RxSources), sources(&p.TxSources))

	if len(exs) < loopExchanges {
		t.Fatalf("%d exchanges of %d in %v", len(exs), loopExchanges, took)
	}
	const maxOffset, maxDelay = int64(5 * time.Millisecond), int64(50 * time.Millisecond)
	for i, ex := range exs {
		if ex.T1 == 0 || ex.T2 == 0 || ex.T3 == 0 || ex.T4 == 0 {
			t.Errorf("exchange %d: t1 %d t2 %d t3 %d t4 %d: one missing", i, ex.T1, ex.T2, ex.T3, ex.T4)
		}
		// One clock: each message arrives after it left.
		if ex.T2 < ex.T1 || ex.T4 < ex.T3 {
			t.Errorf("exchange %d: t1 %d t2 %d t3 %d t4 %d: received before sent", i, ex.T1, ex.T2, ex.T3, ex.T4)
		}
		if ex.Master != loopGM {
			t.Errorf("exchange %d: master %v, want %v", i, ex.Master, loopGM)
		}
		if ex.SyncSource != sockts.SourceSoftware || ex.DelaySource != sockts.SourceSoftware {
			t.Errorf("exchange %d: sources %v/%v, want kernel software both", i, ex.SyncSource, ex.DelaySource)
		}
		if ex.OffsetNS <= -maxOffset || ex.OffsetNS >= maxOffset {
			t.Errorf("exchange %d: offset %d ns: |offset| >= 5 ms on one clock", i, ex.OffsetNS)
		}
		if ex.PathDelayNS < 0 || ex.PathDelayNS >= maxDelay || ex.DelayNS < 0 || ex.DelayNS >= maxDelay {
			t.Errorf("exchange %d: path delay %d ns (last %d ns), want 0 <= delay < 50 ms", i, ex.PathDelayNS, ex.DelayNS)
		}
	}
	// No exchange abandoned: every Delay_Req went out with its transmit
	// timestamp and was answered in time, and no answer came late.
	if st.DelayTimeouts != 0 || st.DelayNoT3 != 0 || p.SendErrors.Load() != 0 || st.Rejects[RejectLate] != 0 {
		t.Errorf("abandoned Delay_Reqs: %d unanswered, %d without t3, %d unsent, %d late answers", st.DelayTimeouts, st.DelayNoT3, p.SendErrors.Load(), st.Rejects[RejectLate])
	}
	// Rejects are logged, not held to zero: over UDP a Sync and the Announce
	// or Follow_Up before it come through two sockets and may be handled in
	// the other order (a master or sequence reject), and over L2 on lo the
	// probe reads its own Delay_Reqs (type rejects).
	if st.Rejects[RejectForeign] != 0 || p.ReadErrors.Load() != 0 || p.Untranslated.Load() != 0 {
		t.Errorf("foreign delay_resps %d, read errors %d, untranslated %d: want none",
			st.Rejects[RejectForeign], p.ReadErrors.Load(), p.Untranslated.Load())
	}
	if !st.HaveMaster || st.Master.Port != loopGM || st.MasterChanges != 1 {
		t.Errorf("master %v (have %v), %d changes: want %v, 1", st.Master.Port, st.HaveMaster, st.MasterChanges, loopGM)
	}
	if p.RxSources[sockts.SourceUser].Load() != 0 || p.TxSources[sockts.SourceUser].Load() != 0 {
		t.Errorf("user-space stamps: rx %d tx %d", p.RxSources[sockts.SourceUser].Load(), p.TxSources[sockts.SourceUser].Load())
	}
	if n := m.syncs.Load(); m.syncTx[sockts.SourceSoftware].Load() != n {
		t.Errorf("master sync stamps %v of %d syncs: want kernel software all", sources(&m.syncTx), n)
	}
	// Every Delay_Req is answered but one the master may have read as the
	// run stopped (the probe's own counts above show none it waited for was
	// left unanswered).
	if n, a := m.delayReqs.Load(), m.answered.Load(); n == 0 || m.delayRx[sockts.SourceSoftware].Load() != n || a+1 < n || a > n {
		t.Errorf("master: %d delay_reqs (stamps %v), %d answered", n, sources(&m.delayRx), a)
	}
}

// sources renders timestamp-source counters.
func sources(c *[4]atomic.Uint64) map[string]uint64 {
	m := map[string]uint64{}
	for s := range c {
		if v := c[s].Load(); v != 0 {
			m[sockts.Source(s).String()] = v
		}
	}
	return m
}

// loopMasterAddr is where the loopback master listens over UDP: a loopback
// address of its own. The probe binds the PTP ports on every address (as
// ptp4l does), so a master on 127.0.0.1 would send its Syncs to itself: on
// 127.0.0.2 it gets the unicast Delay_Reqs (a socket bound to the address
// wins over the wildcard) and the probe gets the Syncs sent to 127.0.0.1.
var loopMasterAddr = netip.MustParseAddr("127.0.0.2")

// TestProbeAgainstLoopbackMaster runs the probe against the loopback master
// with kernel software timestamps, over UDPv4 on 127.0.0.1 (the probe sends
// its Delay_Reqs unicast to the master) and over IEEE 802.3 on lo, both in a
// network namespace of the test's own (see newLoopNetns; no `ip` needed).
// Each takes loopExchanges exchanges and asserts: t1..t4 present and in
// order on the one clock, the master followed, kernel software stamps for
// every Sync and Delay_Req at both ends, |offset| < 5 ms, 0 <= path delay <
// 50 ms, and no Delay_Req abandoned (unanswered, without t3, unsent or
// answered late).
func TestProbeAgainstLoopbackMaster(t *testing.T) {
	needKernelTimestamps(t)
	warmUpLoopback(t)
	ns, nsErr := newLoopNetns(t)
	if nsErr != nil {
		t.Logf("no network namespace of our own (%v): UDPv4 runs on this host's lo, L2 cannot", nsErr)
	}
	t.Run("UDPv4", func(t *testing.T) { testLoopbackUDP(t, ns) })
	t.Run("L2", func(t *testing.T) {
		if nsErr != nil {
			t.Skipf("PTP over IEEE 802.3 on lo needs a namespace of the test's own, where lo can have a MAC address: %v", nsErr)
		}
		testLoopbackL2(t, ns)
	})
}

// warmUpLoopback waits (up to a second) until a loopback datagram is stamped
// by the kernel: receive timestamping is switched on through a deferred
// static key when the first timestamping socket appears, so the first
// packets may go without one.
func warmUpLoopback(t *testing.T) {
	t.Helper()
	open := func() *sockts.Conn {
		c, err := sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), sockts.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := open(), open()
	defer a.Close()
	defer b.Close()
	dst, err := b.LocalAddr()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if _, err := a.WriteTo([]byte("warm"), dst); err != nil {
			t.Fatal(err)
		}
		if _, _, rx, err := b.ReadFrom(buf, 100*time.Millisecond); err == nil && rx.Source == sockts.SourceSoftware {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no kernel receive timestamp on loopback within 1 s")
}

// loProbeMAC is the MAC address lo gets in the test's namespace: the probe
// takes its port identity (and its frames' source over IEEE 802.3) from its
// interface's MAC, and lo has none (all zeros, which Go reports as none).
var loProbeMAC = [6]byte{0x02, 0x00, 0x5e, 0x00, 0x00, 0x01}

// loopNetns is a network namespace of the test's own, made with unshare(2)
// (no `ip`, none in the QEMU guest), with lo up and given loProbeMAC. Giving
// the host's own lo a MAC address would change the machine's network for
// every other process; in a namespace it changes nothing outside the test,
// the PTP ports are free whatever runs on the host, and no real PTP traffic
// reaches the probe. IP over lo works as before with the MAC: the kernel
// addresses lo's frames to lo's own address (checked on Linux 6.18).
type loopNetns struct{ fd int }

// newLoopNetns makes the namespace; it lives until the test's cleanup
// closes the one descriptor that holds it (and the sockets made in it).
func newLoopNetns(t *testing.T) (*loopNetns, error) {
	type result struct {
		fd  int
		err error
	}
	done := make(chan result)
	go func() {
		// The thread leaves for the new namespace and never comes back: it
		// stays locked, so the runtime ends it with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			done <- result{-1, fmt.Errorf("unshare(CLONE_NEWNET): %w", err)}
			return
		}
		fd, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{-1, err}
			return
		}
		if err := loopbackUpWithMAC(loProbeMAC); err != nil {
			unix.Close(fd)
			done <- result{-1, err}
			return
		}
		done <- result{fd, nil}
	}()
	r := <-done
	if r.err != nil {
		return nil, r.err
	}
	t.Cleanup(func() { unix.Close(r.fd) })
	return &loopNetns{fd: r.fd}, nil
}

// loopbackUpWithMAC gives lo of the calling thread's namespace a MAC address
// (SIOCSIFHWADDR) and brings it up, which gives it 127.0.0.1/8.
func loopbackUpWithMAC(mac [6]byte) error {
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(s)
	// struct ifreq with a struct sockaddr in its union, of lo's type
	// (ARPHRD_LOOPBACK: the kernel refuses any other with EINVAL); 40
	// bytes, the size of the whole struct on 64-bit (32 on 32-bit).
	var req struct {
		name   [unix.IFNAMSIZ]byte
		family uint16
		data   [14]byte
		_      [8]byte
	}
	copy(req.name[:], "lo")
	req.family = unix.ARPHRD_LOOPBACK
	copy(req.data[:], mac[:])
	if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(s), unix.SIOCSIFHWADDR, uintptr(unsafe.Pointer(&req))); e != 0 {
		return fmt.Errorf("SIOCSIFHWADDR lo: %w", e)
	}
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(s, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(s, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

// do runs f on an OS thread inside the namespace (nil: in the test's own).
// Sockets f makes stay in the namespace wherever they are used later.
func (n *loopNetns) do(f func() error) error {
	if n == nil {
		return f()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := unix.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(orig)
	if err := unix.Setns(n.fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns: %w", err)
	}
	ferr := f()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		runtime.Goexit() // stuck in the test's namespace: do not hand the thread back
	}
	return ferr
}

// identityInterface names the interface ListenUDP takes its port identity
// and multicast membership from in the test's own namespace (no namespace
// of ours): lo where the probe accepts it, else the first interface with a
// MAC address (eth0 in the guest). The traffic is unicast on lo either way.
func identityInterface(t *testing.T) string {
	_, _, err := probeInterface("lo")
	if err == nil {
		return "lo"
	}
	ifs, ierr := net.Interfaces()
	if ierr != nil {
		t.Fatal(ierr)
	}
	for _, up := range []bool{true, false} { // prefer an interface that is up
		for _, ifi := range ifs {
			if len(ifi.HardwareAddr) == 6 && ifi.Flags&net.FlagLoopback == 0 && (ifi.Flags&net.FlagUp != 0) == up {
				t.Logf("the probe's identity from %s (%v): lo has none (%v)", ifi.Name, ifi.HardwareAddr, err)
				return ifi.Name
			}
		}
	}
	t.Skipf("no interface the probe can take its port identity from (lo: %v; none has a MAC address)", err)
	return ""
}

// testLoopbackUDP: the probe's ports are the standard 319 and 320 (ListenUDP
// takes no others). In the test's namespace they are free; without one it
// needs root (or CAP_NET_BIND_SERVICE) and the ports free of other sockets
// (a ptp4l could take the master's unicast Syncs).
func testLoopbackUDP(t *testing.T, ns *loopNetns) {
	iface := "lo"
	if ns == nil {
		for _, port := range []int{EventPort, GeneralPort} {
			c, err := net.ListenUDP("udp4", &net.UDPAddr{Port: port})
			if err != nil {
				if errors.Is(err, unix.EACCES) {
					t.Skipf("UDP port %d: %v: binding the PTP ports needs root or CAP_NET_BIND_SERVICE", port, err)
				}
				t.Skipf("UDP port %d is taken (%v): a ptp4l on this host would share the master's messages", port, err)
			}
			c.Close()
		}
		iface = identityInterface(t)
	}
	var p *Probe
	var ev, tx *sockts.Conn
	if err := ns.do(func() (err error) {
		if p, err = ListenUDP(UDPConfig{Interface: iface, Master: loopMasterAddr, Domain: loopDomain}); err != nil {
			return err
		}
		t.Cleanup(func() { p.Close() })
		// The master reads Delay_Reqs on its event port and sends from a
		// socket of its own, so reading never waits on its sends (see
		// ListenUDP).
		if ev, err = sockts.ListenUDP(netip.AddrPortFrom(loopMasterAddr, EventPort), sockts.Options{ReuseAddr: true}); err != nil {
			return err
		}
		t.Cleanup(func() { ev.Close() })
		if tx, err = sockts.ListenUDP(netip.AddrPortFrom(loopMasterAddr, 0), sockts.Options{}); err != nil {
			return err
		}
		t.Cleanup(func() { tx.Close() })
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	probeAddr := netip.MustParseAddr("127.0.0.1")
	m := &loopMaster{
		send: func(b []byte, general bool) (sockts.Timestamp, error) {
			if general {
				return tx.WriteTo(b, netip.AddrPortFrom(probeAddr, GeneralPort))
			}
			return tx.WriteTo(b, netip.AddrPortFrom(probeAddr, EventPort))
		},
		recv: func(buf []byte, timeout time.Duration) ([]byte, sockts.Timestamp, error) {
			n, _, ts, err := ev.ReadFrom(buf, timeout)
			return buf[:n], ts, err
		},
	}
	measureLoopback(t, p, m)
}

// loopMasterMAC is the loopback master's source address over IEEE 802.3.
var loopMasterMAC = net.HardwareAddr{0x02, 0xaa, 0xbb, 0xcc, 0xdd, 0x01}

// testLoopbackL2: PTP over IEEE 802.3 on lo of the test's namespace. A frame
// sent on an AF_PACKET socket of lo comes back as an incoming frame (to the
// multicast 01:1B:19:00:00:00: PACKET_MULTICAST) to every packet socket of
// lo, the sender's own included, with software transmit (loopback_xmit) and
// receive (netif_rx) timestamps; the master ignores its own frames by type,
// and the probe refuses its own Delay_Reqs as it would any (RejectType).
func testLoopbackL2(t *testing.T, ns *loopNetns) {
	var p *Probe
	var pc *packet.Conn
	var rx, tx *sockts.Conn
	if err := ns.do(func() (err error) {
		if p, err = ListenL2(L2Config{Interface: "lo", Domain: loopDomain}); err != nil {
			return err
		}
		t.Cleanup(func() { p.Close() })
		lo, err := net.InterfaceByName("lo")
		if err != nil {
			return err
		}
		// The master's sockets are the probe's: one that reads EtherType
		// 0x88F7 and one (protocol 0, receiving nothing) that sends.
		if pc, err = packet.Listen(lo, packet.Raw, int(EtherType), nil); err != nil {
			return err
		}
		t.Cleanup(func() { pc.Close() })
		rc, err := pc.SyscallConn()
		if err != nil {
			return err
		}
		var serr error
		if err := rc.Control(func(fd uintptr) { rx, serr = sockts.FromFD(int(fd), sockts.Options{}) }); err != nil || serr != nil {
			return errors.Join(err, serr)
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		t.Cleanup(func() { unix.Close(fd) })
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Ifindex: lo.Index}); err != nil {
			return err
		}
		tx, err = sockts.FromFD(fd, sockts.Options{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	m := &loopMaster{
		send: func(b []byte, _ bool) (sockts.Timestamp, error) {
			f, err := l2Frame(loopMasterMAC, b)
			if err != nil {
				return sockts.Timestamp{}, err
			}
			return tx.Write(f)
		},
		recv: func(buf []byte, timeout time.Duration) ([]byte, sockts.Timestamp, error) {
			n, _, ts, err := rx.ReadFrom(buf, timeout)
			if err != nil {
				return nil, ts, err
			}
			b, _ := l2Payload(buf[:n])
			return b, ts, nil
		},
	}
	measureLoopback(t, p, m)
}
