package ptp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/facebook/time/ptp/protocol"

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
}

// UDPProbe runs a Slave over UDPv4 multicast (or Delay_Req unicast to a master).
type UDPProbe struct {
	Slave   *Slave
	event   *sockts.Conn
	general *sockts.Conn
	dst     netip.AddrPort

	BytesSent, BytesReceived atomic.Uint64 // Ethernet frame bytes
	// RxSources counts received event messages by timestamp source
	// (indexed by sockts.Source); TxSources the Delay_Reqs sent.
	RxSources, TxSources [4]atomic.Uint64
}

// udpOverhead is UDP + IPv4 + Ethernet headers around a PTP message.
const udpOverhead = 8 + 20 + 14

// ListenUDP opens the event and general ports on the interface's IPv4 address
// and joins the PTP group there. It needs ports 319 and 320 free: it cannot run
// beside a ptp4l on the same interface and network namespace (use IEEE 802.3
// there, or another namespace).
func ListenUDP(cfg UDPConfig) (*UDPProbe, error) {
	ifi, err := net.InterfaceByName(cfg.Interface)
	if err != nil {
		return nil, fmt.Errorf("ptp probe: interface %s: %w", cfg.Interface, err)
	}
	port, err := probeIdentity(ifi)
	if err != nil {
		return nil, err
	}
	p := &UDPProbe{Slave: &Slave{Port: port, Domain: cfg.Domain}, dst: netip.AddrPortFrom(DefaultGroup, EventPort)}
	if cfg.Master.IsValid() {
		p.dst = netip.AddrPortFrom(cfg.Master, EventPort)
	}
	for _, s := range []struct {
		port uint16
		conn **sockts.Conn
	}{{EventPort, &p.event}, {GeneralPort, &p.general}} {
		c, err := sockts.ListenUDP(netip.AddrPortFrom(netip.IPv4Unspecified(), s.port), sockts.Options{TxWait: cfg.TxWait})
		if err != nil {
			p.Close()
			return nil, fmt.Errorf("ptp probe: port %d: %w", s.port, err)
		}
		*s.conn = c
		if err := c.JoinGroup(DefaultGroup, ifi.Index); err != nil {
			p.Close()
			return nil, fmt.Errorf("ptp probe: %w", err)
		}
	}
	return p, nil
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
func (p *UDPProbe) Close() error {
	var errs []error
	for _, c := range []*sockts.Conn{p.event, p.general} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

type msg struct {
	b       []byte
	rx      int64
	general bool
}

// Run measures until ctx is done, sending every completed exchange to out.
func (p *UDPProbe) Run(ctx context.Context, out chan<- Exchange) error {
	in := make(chan msg, 64)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, r := range []struct {
		c       *sockts.Conn
		general bool
	}{{p.event, false}, {p.general, true}} {
		go func() {
			buf := make([]byte, 1500)
			for ctx.Err() == nil {
				n, _, ts, err := r.c.ReadFrom(buf, 100*time.Millisecond)
				if err != nil {
					continue
				}
				p.BytesReceived.Add(uint64(n) + udpOverhead)
				if !r.general {
					p.RxSources[ts.Source].Add(1)
				}
				select {
				case in <- msg{b: append([]byte(nil), buf[:n]...), rx: ts.NS, general: r.general}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	req := make([]byte, 64)
	var timer *time.Timer
	var due <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-due:
			due = nil
			b, err := p.Slave.DelayReq(req)
			if err != nil {
				continue
			}
			tx, err := p.event.WriteTo(b, p.dst)
			if err != nil {
				continue
			}
			p.BytesSent.Add(uint64(len(b)) + udpOverhead)
			p.TxSources[tx.Source].Add(1)
			p.Slave.Sent(tx.NS)
		case m := <-in:
			if m.general {
				ex, err := p.Slave.General(m.b, time.Now())
				if err == nil && ex != nil {
					select {
					case out <- *ex:
					default:
					}
				}
				continue
			}
			ex, send, err := p.Slave.Event(m.b, m.rx)
			if err == nil && ex != nil {
				select {
				case out <- *ex:
				default:
				}
			}
			if err != nil || !send || due != nil {
				continue
			}
			// Like ptp4l, send the Delay_Req at a random moment after the Sync
			// rather than at once, when the master is busy with its Follow_Up.
			wait := 50*time.Millisecond + time.Duration(rand.Int64N(int64(400*time.Millisecond)))
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			due = timer.C
		}
	}
}
