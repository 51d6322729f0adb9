// Package ntptest is a fake NTP server behind a fake timestamping socket, for
// tests of the ntp probe and of the code that ships its samples.
package ntptest

import (
	"encoding/binary"
	"net/netip"
	"time"

	"github.com/monagent/monagent/sockts"
)

// Server answers every request of a probe at once, as chronyd would over a
// link of a fixed delay: in basic mode, or in interleaved mode when asked
// (RFC 9769 style: the reply to an interleaved request carries the transmit
// timestamp of the previous reply). It implements ntp.Conn and the
// Option/Close of a sockts.Conn.
//
// Clocks: the client's REALTIME is Now, advanced by Step before each request;
// the server's clock is REALTIME − OffsetNS (so the true offset, local − server,
// is OffsetNS); the NIC's PHC reads REALTIME + PHCOffsetNS. T1 and T4 are
// returned in the domain of TxSource and RxSource (PHC time for
// sockts.SourceHardware, REALTIME otherwise).
type Server struct {
	Addr               netip.AddrPort
	Now, Step          int64
	OffsetNS           int64
	DelayNS            int64 // one way
	ProcessingNS       int64 // T3 − T2 of a basic reply
	KernelTxLagNS      int64 // the kernel's transmit stamp of a reply, after its basic T3
	PHCOffsetNS        int64
	TxSource, RxSource sockts.Source
	// NoKernelTx: the server has no kernel transmit timestamps, so an
	// interleaved reply repeats the basic transmit timestamp of the reply
	// before it (as chronyd does then).
	NoKernelTx bool
	// Silent: the server takes requests and answers none.
	Silent bool

	prevT3, prevKernelT3 int64 // server times of the last reply
	prevRxRaw            uint64
	pending              [][]byte
	pendingTs            []int64
}

func (s *Server) stamp(realtime int64, src sockts.Source) sockts.Timestamp {
	if src == sockts.SourceHardware {
		return sockts.Timestamp{NS: realtime + s.PHCOffsetNS, Source: src}
	}
	return sockts.Timestamp{NS: realtime, Source: src}
}

// toNTP is an NTP timestamp of Unix ns (rounded, so it converts back exactly).
func toNTP(ns int64) uint64 {
	const era = 2_208_988_800 // 1900 to 1970, s
	sec := uint64(ns/1e9 + era)
	frac := (uint64(ns%1e9)<<32 + 500_000_000) / 1e9
	if frac>>32 != 0 {
		sec, frac = sec+1, 0
	}
	return sec<<32 | frac
}

// WriteTo takes a request and queues the server's reply.
func (s *Server) WriteTo(b []byte, to netip.AddrPort) (sockts.Timestamp, error) {
	s.Now += s.Step
	t1 := s.Now
	t2 := t1 + s.DelayNS - s.OffsetNS // server clock
	t3 := t2 + s.ProcessingNS
	t4 := t1 + 2*s.DelayNS + s.ProcessingNS + s.KernelTxLagNS // the reply leaves at the kernel's stamp
	origin := binary.BigEndian.Uint64(b[24:32])
	xcookie := binary.BigEndian.Uint64(b[32:40])
	cookie := binary.BigEndian.Uint64(b[40:48])
	reply := make([]byte, 48)
	reply[0] = 0<<6 | 4<<3 | 4
	reply[1] = 2
	reply[2] = 3
	reply[3] = 0xec // precision 2^-20
	binary.BigEndian.PutUint32(reply[12:], 0x0a000002)
	rxRaw := toNTP(t2)
	tx := t3
	echo := cookie
	if origin != 0 && origin == s.prevRxRaw && xcookie != 0 {
		echo = xcookie // interleaved: the previous reply's transmit time
		tx = s.prevKernelT3
		if s.NoKernelTx {
			tx = s.prevT3
		}
	}
	binary.BigEndian.PutUint64(reply[24:], echo)
	binary.BigEndian.PutUint64(reply[32:], rxRaw)
	binary.BigEndian.PutUint64(reply[40:], toNTP(tx))
	s.prevT3, s.prevKernelT3, s.prevRxRaw = t3, t3+s.KernelTxLagNS, rxRaw
	if s.Silent {
		return s.stamp(t1, s.TxSource), nil
	}
	s.pending = append(s.pending, reply)
	s.pendingTs = append(s.pendingTs, t4)
	return s.stamp(t1, s.TxSource), nil
}

// ReadFrom returns the next reply, stamped at its arrival.
func (s *Server) ReadFrom(b []byte, timeout time.Duration) (int, netip.AddrPort, sockts.Timestamp, error) {
	if len(s.pending) == 0 {
		return 0, netip.AddrPort{}, sockts.Timestamp{}, sockts.ErrTimeout
	}
	n := copy(b, s.pending[0])
	t4 := s.pendingTs[0]
	s.pending, s.pendingTs = s.pending[1:], s.pendingTs[1:]
	return n, s.Addr, s.stamp(t4, s.RxSource), nil
}

// Option names the timestamping the fake socket claims.
func (s *Server) Option() (string, error) { return "fake", nil }

// Close does nothing.
func (s *Server) Close() error { return nil }
