package ptp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/facebook/time/ptp/protocol"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
)

// Receive filters for the probe's hardware timestamps, in order of
// preference: PTPv2 events of any layer (what ptp4l sets, so a NIC it runs on
// is left as it is), of the transport's layer only, every packet.
var (
	rxFiltersUDP = []int32{unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT, unix.HWTSTAMP_FILTER_ALL}
	rxFiltersL2  = []int32{unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT, unix.HWTSTAMP_FILTER_ALL}
)

// ListenUDP opens the event and general ports and joins the PTP group on the
// interface. It shares ports 319 and 320 with a ptp4l on the same host
// (SO_REUSEADDR, which ptp4l sets too): both get every multicast message, and
// each takes the Delay_Resps addressed to its own port identity. (With Master
// set, a master that answers unicast reaches only one of them.)
func ListenUDP(cfg UDPConfig) (*Probe, error) {
	ifi, port, err := probeInterface(cfg.Interface)
	if err != nil {
		return nil, err
	}
	p := &Probe{Slave: &Slave{Port: port, Domain: cfg.Domain}, Transport: "udp4", hardware: cfg.Hardware}
	hw := sockts.Options{TxWait: cfg.TxWait, Hardware: cfg.Hardware, Interface: cfg.Interface, RxFilters: rxFiltersUDP}
	dst := netip.AddrPortFrom(DefaultGroup, EventPort)
	if cfg.Master.IsValid() {
		dst = netip.AddrPortFrom(cfg.Master, EventPort)
	}
	for _, s := range []struct {
		port    uint16
		general bool
	}{{EventPort, false}, {GeneralPort, true}} {
		o := sockts.Options{TxWait: cfg.TxWait, ReuseAddr: true}
		if !s.general {
			o = hw
			o.ReuseAddr = true
		}
		c, err := sockts.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), s.port), o)
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("ptp probe: port %d: %w", s.port, err)
		}
		p.closers = append(p.closers, c.Close)
		p.readers = append(p.readers, reader{c: c, general: s.general})
		if err := c.JoinGroup(DefaultGroup, ifi.Index); err != nil {
			p.Close()
			return nil, fmt.Errorf("ptp probe: %w", err)
		}
	}
	// Delay_Reqs leave from a socket of their own that nobody reads. The
	// kernel takes the software transmit timestamp and then wakes whoever
	// waits on the socket for its error queue before the frame moves on: on
	// the event socket that is our reader, blocked in poll, and the wakeup
	// (an inter-processor interrupt, a VM exit on a virtual machine) lands
	// between t3 and the master's t4: +3 us on every Delay_Req, measured, and
	// the offset off by half of it. ptp4l has one thread, never polling
	// while it sends.
	tx, err := sockts.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), 0), hw)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: send socket: %w", err)
	}
	p.closers = append(p.closers, tx.Close)
	if err := tx.SendMulticast(ifi.Index); err != nil {
		p.Close()
		return nil, fmt.Errorf("ptp probe: %w", err)
	}
	if !cfg.NoWarmUp && !cfg.Hardware {
		// From the Delay_Req's own socket: the warmest path (the NTP probe's
		// measurements, docs/performance.md).
		to, one := loopbackDiscard(), make([]byte, 1)
		p.warm = func() { _, _ = tx.WriteTo(one, to) }
	}
	p.send = func(b []byte) (sockts.Timestamp, error) {
		ts, err := tx.WriteTo(b, dst)
		if err == nil {
			p.BytesSent.Add(uint64(len(b)) + udpOverhead)
		}
		return ts, err
	}
	return p, nil
}

// probeInterface looks up the interface and the probe's port identity on it.
func probeInterface(name string) (*net.Interface, protocol.PortIdentity, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil, protocol.PortIdentity{}, fmt.Errorf("ptp probe: interface %s: %w", name, err)
	}
	port, err := probeIdentity(ifi)
	return ifi, port, err
}

// probeIdentity is the probe's port identity: the interface's EUI-64 with the
// locally administered bit flipped, so it never equals a ptp4l's on the same
// NIC, and port number 1.
func probeIdentity(ifi *net.Interface) (protocol.PortIdentity, error) {
	mac := ifi.HardwareAddr
	if len(mac) != 6 {
		return protocol.PortIdentity{}, fmt.Errorf("ptp probe: interface %s has no MAC address", ifi.Name)
	}
	id := uint64(mac[0]^0x02)<<56 | uint64(mac[1])<<48 | uint64(mac[2])<<40 | 0xff<<32 | 0xfe<<24 | uint64(mac[3])<<16 | uint64(mac[4])<<8 | uint64(mac[5])
	return protocol.PortIdentity{ClockIdentity: protocol.ClockIdentity(id), PortNumber: 1}, nil
}

// Close closes the sockets.
func (p *Probe) Close() error {
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		errs = append(errs, p.closers[i]())
	}
	p.closers = nil
	return errors.Join(errs...)
}

type msg struct {
	buf     *[]byte // from the free list; b is within it
	b       []byte
	rx      int64
	src     sockts.Source
	general bool
}

// stamp returns a timestamp in REALTIME: a hardware one translated.
func (p *Probe) stamp(ts sockts.Timestamp) (int64, bool) {
	if ts.Source != sockts.SourceHardware {
		return ts.NS, true
	}
	if p.Translate != nil {
		if ns, err := p.Translate(ts.NS); err == nil {
			return ns, true
		}
	}
	p.Untranslated.Add(1)
	return 0, false
}

// isGeneral: message types from 8 on (Follow_Up, Delay_Resp, Announce, ...)
// are general messages, the ones before event messages.
func isGeneral(b []byte) bool { return len(b) > 0 && b[0]&0x0f >= 8 }

// loopbackDiscard is where a warm-up datagram goes (Probe.warm): the
// host's own discard port, so nothing leaves the host.
func loopbackDiscard() netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 9)
}

// msgBuffers is how many messages may wait between the readers and the
// Slave; they are reused, so a message costs no allocation.
const msgBuffers = 16

// Run measures until ctx is done, handing every completed exchange to emit
// on Run's goroutine (the pointer is valid during the call only: copy what
// is kept). emit must not block: the probe's own timing depends on it. Run
// counts what it cannot use: frames that are not PTP (Dropped), stamps it
// cannot translate (Untranslated), messages the Slave refuses (Stats().Rejects),
// failed reads and sends, and abandoned Delay_Reqs. A reader never drops a
// message it read: it waits for a free buffer instead (the socket's own
// queue absorbs a burst).
func (p *Probe) Run(ctx context.Context, emit func(*Exchange)) error {
	if p.hardware && p.Translate == nil {
		return errors.New("ptp probe: hardware timestamps need Probe.Translate (PHC to REALTIME)")
	}
	in := make(chan msg, msgBuffers)
	free := make(chan *[]byte, msgBuffers+len(p.readers))
	for range cap(free) {
		b := make([]byte, 1536)
		free <- &b
	}
	ctx, cancel := context.WithCancel(ctx)
	// The readers are done before Run returns, so Close never pulls a socket
	// from under one.
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, r := range p.readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.read(ctx, r, in, free)
		}()
	}
	req := make([]byte, 64)
	var syncSrc, delaySrc sockts.Source
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-due:
			due = nil
			b, err := p.Slave.DelayReq(req, time.Now())
			if err != nil {
				continue
			}
			if p.warm != nil {
				p.warm()
			}
			tx, err := p.send(b)
			if err != nil {
				p.SendErrors.Add(1)
				p.Slave.Unsent()
				p.publish()
				continue
			}
			p.TxSources[tx.Source].Add(1)
			t3, ok := p.stamp(tx)
			if ok {
				delaySrc = tx.Source
			}
			p.Slave.Sent(t3) // 0 when untranslatable: abandoned, counted
			p.publish()
		case m := <-in:
			if !m.general {
				syncSrc = m.src
			}
			ex, send, err := p.handle(m)
			free <- m.buf
			p.publish()
			if ex != nil {
				ex.SyncSource, ex.DelaySource = syncSrc, delaySrc
				p.Exchanges.Add(1)
				emit(ex)
			}
			if err != nil || !send || due != nil {
				continue
			}
			// Like ptp4l, send the Delay_Req at a random moment after the Sync
			// rather than at once, when the master is busy with its Follow_Up.
			timer.Reset(50*time.Millisecond + time.Duration(rand.Int64N(int64(400*time.Millisecond))))
			due = timer.C
		}
	}
}

// read hands the messages of one socket to Run until ctx is done.
func (p *Probe) read(ctx context.Context, r reader, in chan<- msg, free chan *[]byte) {
	var buf *[]byte
	for ctx.Err() == nil {
		if buf == nil {
			select {
			case buf = <-free:
			case <-ctx.Done():
				return
			}
		}
		n, _, ts, err := r.c.ReadFrom(*buf, 100*time.Millisecond)
		if errors.Is(err, sockts.ErrTimeout) {
			continue
		}
		if err != nil {
			// Counted, and not in a tight loop: a socket that keeps failing
			// is retried ten times a second.
			p.ReadErrors.Add(1)
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		p.BytesReceived.Add(uint64(n))
		b, general := (*buf)[:n], r.general
		if r.l2 {
			var ok bool
			if b, ok = l2Payload(b); !ok {
				p.Dropped.Add(1)
				continue
			}
			general = isGeneral(b)
		} else {
			p.BytesReceived.Add(udpOverhead)
		}
		var rx int64
		if !general {
			p.RxSources[ts.Source].Add(1)
			var ok bool
			if rx, ok = p.stamp(ts); !ok {
				continue // counted in Untranslated
			}
		}
		select {
		case in <- msg{buf: buf, b: b, rx: rx, src: ts.Source, general: general}:
			buf = nil
		case <-ctx.Done():
			return
		}
	}
}

// handle gives a message to the Slave.
func (p *Probe) handle(m msg) (*Exchange, bool, error) {
	now := time.Now()
	if m.general {
		ex, err := p.Slave.General(m.b, now)
		return ex, false, err
	}
	return p.Slave.Event(m.b, m.rx, now)
}
