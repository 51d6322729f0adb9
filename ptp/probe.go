package ptp

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

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
	// NoWarmUp turns off the datagram to the host's own loopback discard
	// port sent just before each Delay_Req with software timestamps (see
	// Probe.warm): the Delay_Req then takes the path as cold as ptp4l's.
	NoWarmUp bool
}

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
	// warm, when set, is called just before each Delay_Req is sent. A
	// datagram that has just taken the host's send path leaves it warm
	// (caches, branch predictors, the veth's and the IP stack's code): a
	// Delay_Req sent after a second's sleep takes ~2.4 us from its transmit
	// stamp t3 to the master's receive stamp t4 across a veth pair, against
	// ~1.0 us after one byte to 127.0.0.1:9; half of that excess is an
	// offset error of the slave's own, which ptp4l keeps
	// (docs/performance.md). Nothing leaves the host. With hardware timestamps the NIC stamps at the wire
	// and the probe sends none.
	warm    func()
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

// Rejected is how many messages were refused, whatever the reason.
func (s ProbeStats) Rejected() uint64 {
	var n uint64
	for _, r := range s.Rejects {
		n += r
	}
	return n
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
