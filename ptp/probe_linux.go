package ptp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ptp/protocol"
	"golang.org/x/sys/unix"

	"github.com/monagent/monagent/sockts"
)

// PTP over UDPv4 (IEEE 1588 annex D).
const (
	EventPort   = 319
	GeneralPort = 320
)

// DefaultGroup is the PTP primary multicast group.
var DefaultGroup = netip.MustParseAddr("224.0.1.129")

// UDPConfig configures a probe over UDPv4.
type UDPConfig struct {
	Interface string     // the link the master is on
	Master    netip.Addr // unicast Delay_Req to this master; zero: multicast
	Domain    uint8
	TxWait    time.Duration
	// Hardware takes the event messages' timestamps from the NIC's PHC;
	// set Probe.Translate before Run.
	Hardware bool
}

// Receive filters for the probe's hardware timestamps, in order of
// preference: PTPv2 events of any layer (what ptp4l sets, so a NIC it runs on
// is left as it is), of the transport's layer only, every packet.
var (
	rxFiltersUDP = []int32{unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L4_EVENT, unix.HWTSTAMP_FILTER_ALL}
	rxFiltersL2  = []int32{unix.HWTSTAMP_FILTER_PTP_V2_EVENT, unix.HWTSTAMP_FILTER_PTP_V2_L2_EVENT, unix.HWTSTAMP_FILTER_ALL}
)

// Probe runs a Slave over one transport: UDPv4 (ListenUDP) or IEEE 802.3
// (ListenL2). It never adjusts a clock.
type Probe struct {
	Slave     *Slave
	Transport string // "udp4" or "l2"

	BytesSent, BytesReceived atomic.Uint64 // Ethernet frame bytes (no FCS)
	// RxSources counts received event messages by timestamp source
	// (indexed by sockts.Source); TxSources the Delay_Reqs sent.
	RxSources, TxSources [4]atomic.Uint64
	// Dropped counts frames that were not PTP (L2: another EtherType, a
	// truncated Ethernet header).
	Dropped atomic.Uint64
	// ReadErrors counts failed reads (not timeouts); SendErrors Delay_Reqs
	// that could not be sent (each abandoned); Exchanges the measurements
	// handed to Run's emit.
	ReadErrors, SendErrors, Exchanges atomic.Uint64

	// Translate moves a hardware timestamp (the NIC's PHC) to REALTIME. A
	// probe opened with Hardware needs it; it must be safe for concurrent use.
	// A timestamp it cannot translate is counted in Untranslated and its
	// message dropped: the Slave never mixes clock domains.
	Translate    func(phcNS int64) (int64, error)
	Untranslated atomic.Uint64
	hardware     bool

	mu    sync.Mutex
	stats ProbeStats // the Slave's counters as of the last message, for other goroutines

	readers []reader
	send    func(b []byte) (sockts.Timestamp, error)
	closers []func() error
}

// ProbeStats is a snapshot of the probe's Slave, safe to take while Run runs
// (the Slave itself belongs to Run's goroutine).
type ProbeStats struct {
	Rejects       [numRejects]uint64
	MasterChanges uint64
	// Delay_Reqs abandoned: unanswered in time, or without a usable t3.
	DelayTimeouts, DelayNoT3 uint64
	Master                   Master // the master followed, when HaveMaster
	HaveMaster               bool
}

// Stats returns the latest snapshot.
func (p *Probe) Stats() ProbeStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *Probe) publish() {
	p.mu.Lock()
	p.stats.Rejects = p.Slave.Rejects
	p.stats.MasterChanges = p.Slave.MasterChanges
	p.stats.DelayTimeouts, p.stats.DelayNoT3 = p.Slave.DelayTimeouts, p.Slave.DelayNoT3
	p.stats.Master, p.stats.HaveMaster = p.Slave.Best()
	p.mu.Unlock()
}

// reader is one socket the probe reads.
type reader struct {
	c       *sockts.Conn
	general bool // the general port (UDP); L2 has one socket for both kinds
	l2      bool // frames carry an Ethernet header
}

// udpOverhead is UDP + IPv4 + Ethernet headers around a PTP message.
const udpOverhead = 8 + 20 + 14

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
