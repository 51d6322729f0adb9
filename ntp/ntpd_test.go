package ntp

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ntpdGolden holds datagrams captured from the real ntpd (see
// captureNtpdGolden).
const ntpdGolden = "testdata/ntpsec-1.2.2.mode6"

// goldenDatagram is one captured reply datagram and the request it answered.
type goldenDatagram struct {
	op    uint8
	assoc uint16
	pkt   []byte
}

func readGolden(t testing.TB) []goldenDatagram {
	t.Helper()
	f, err := os.Open(ntpdGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []goldenDatagram
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fs := strings.Fields(l)
		op, err1 := strconv.Atoi(fs[0])
		assoc, err2 := strconv.Atoi(fs[1])
		pkt, err3 := hex.DecodeString(fs[2])
		if len(fs) != 3 || errors.Join(err1, err2, err3) != nil {
			t.Fatalf("%s: %q", ntpdGolden, l)
		}
		out = append(out, goldenDatagram{uint8(op), uint16(assoc), pkt})
	}
	return out
}

// ctlConn is a fake ntpd's socket: each request written is answered by
// reply(op, assoc, seq), whose datagrams a Read returns in order; a Read
// with nothing queued is a timeout.
type ctlConn struct {
	net.Conn
	reply  func(op uint8, assoc, seq uint16) [][]byte
	queue  [][]byte
	writes int
}

func (c *ctlConn) Write(b []byte) (int, error) {
	c.writes++
	c.queue = append(c.queue, c.reply(b[1]&0x1f, binary.BigEndian.Uint16(b[6:]), binary.BigEndian.Uint16(b[2:]))...)
	return len(b), nil
}

func (c *ctlConn) Read(b []byte) (int, error) {
	if len(c.queue) == 0 {
		return 0, os.ErrDeadlineExceeded
	}
	n := copy(b, c.queue[0])
	c.queue = c.queue[1:]
	return n, nil
}

func (c *ctlConn) SetDeadline(time.Time) error { return nil }
func (c *ctlConn) Close() error                { return nil }

// goldenReplies answers each request with the captured datagrams of that
// request, renumbered to its sequence.
func goldenReplies(g []goldenDatagram) func(op uint8, assoc, seq uint16) [][]byte {
	return func(op uint8, assoc, seq uint16) [][]byte {
		var out [][]byte
		for _, d := range g {
			if d.op == op && d.assoc == assoc {
				p := append([]byte(nil), d.pkt...)
				binary.BigEndian.PutUint16(p[2:], seq)
				out = append(out, p)
			}
		}
		return out
	}
}

// fakeNtpd is a monitor talking to conn.
func fakeNtpd(conn *ctlConn) *Ntpd {
	m := NewNtpd("127.0.0.1:123", time.Second)
	m.conn = conn
	return m
}

// TestNtpdGoldenNtpsec decodes the replies captured from NTPsec 1.2.2: the
// system variables, the one association (the chronyd upstream, sys.peer,
// its reply in two fragments), and the items of NTPsec's filter arrays
// that carry uninitialised memory skipped and counted.
func TestNtpdGoldenNtpsec(t *testing.T) {
	g := readGolden(t)
	m := fakeNtpd(&ctlConn{reply: goldenReplies(g)})
	st, err := m.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s := st.System
	if s == nil || s.Leap != 3 || s.Stratum != 2 || s.Precision != -24 || s.RefID != "10.233.0.1" || s.SysPeer == 0 ||
		s.OffsetNS != 0 || s.RootDispNS <= 0 || s.RefTimeNS < 1.7e18 || s.Version != "ntpd ntpsec-1.2.2" || s.HasTAI || s.Garbled != 0 {
		t.Fatalf("system %+v", s)
	}
	if len(st.Peers) != 1 {
		t.Fatalf("%d peers", len(st.Peers))
	}
	p := st.Peers[0]
	if p.Association != s.SysPeer || p.Address != "10.233.0.1" || p.SrcPort != 123 || p.SelectionName != "sys.peer" || p.Selection != 6 ||
		!p.Configured || !p.Reachable || p.Stratum != 1 || p.Leap != 0 || p.HMode != 3 || p.Reach == 0 ||
		p.DelayNS <= 0 || p.DispersionNS <= 0 || p.Garbled == 0 {
		t.Fatalf("peer %+v", p)
	}
	frags := 0
	for _, d := range g {
		if d.assoc == p.Association {
			frags++
		}
	}
	if frags < 2 {
		t.Errorf("the golden peer reply is in %d fragment(s); it was captured in 2", frags)
	}
	if m.Garbled.Load() != uint64(p.Garbled) || m.Stale.Load()+m.Malformed.Load()+m.Truncated.Load() != 0 {
		t.Errorf("counters: garbled %d stale %d malformed %d truncated %d", m.Garbled.Load(), m.Stale.Load(), m.Malformed.Load(), m.Truncated.Load())
	}
}

// ctlPacket builds a reply datagram.
func ctlPacket(rem uint8, seq, status, assoc, off uint16, data string) []byte {
	p := make([]byte, 12, 12+len(data))
	p[0] = 2<<3 | 6
	p[1] = rem
	binary.BigEndian.PutUint16(p[2:], seq)
	binary.BigEndian.PutUint16(p[4:], status)
	binary.BigEndian.PutUint16(p[6:], assoc)
	binary.BigEndian.PutUint16(p[8:], off)
	binary.BigEndian.PutUint16(p[10:], uint16(len(data)))
	return append(p, data...)
}

const (
	sysVars  = "leap=0, stratum=2, precision=-24, rootdelay=0.100, rootdisp=1.500,\r\nrefid=10.0.0.1, reftime=0xeeb125e0.80000000, tc=6, peer=7, offset=-0.012345,\r\nfrequency=-1.234567, sys_jitter=0.002000, clk_jitter=0.001, clk_wander=0.004, mintc=3, tai=37, version=\"ntpd ntpsec-1.2.2, x\""
	peerVars = "srcadr=10.0.0.1, srcport=123, leap=0, stratum=1, hpoll=6, ppoll=6, reach=0xff, offset=0.5, delay=0.25, dispersion=1.0, jitter=0.01"
)

// scripted answers: status with association 7 (sys.peer), system and peer
// variables, each in one datagram unless the case changes it.
func scripted(change func(op uint8, assoc, seq uint16, std [][]byte) [][]byte) func(op uint8, assoc, seq uint16) [][]byte {
	return func(op uint8, assoc, seq uint16) [][]byte {
		var std [][]byte
		switch {
		case op == 1:
			std = [][]byte{ctlPacket(0x81, seq, 0x0615, 0, 0, "\x00\x07\x96\x1a")}
		case assoc == 0:
			std = [][]byte{ctlPacket(0x82, seq, 0x0615, 0, 0, sysVars)}
		default:
			std = [][]byte{ctlPacket(0x82, seq, 0x961a, assoc, 0, peerVars)}
		}
		if change == nil {
			return std
		}
		return change(op, assoc, seq, std)
	}
}

func TestNtpdDecodesUnits(t *testing.T) {
	m := fakeNtpd(&ctlConn{reply: scripted(nil)})
	st, err := m.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	s, p := st.System, st.Peers[0]
	// reftime 0xeeb125e0.8: 2026-11-25T09:... + 0.5 s.
	if s.OffsetNS != -12345 || s.FreqPPB != -1235 || s.RootDelayNS != 100_000 || s.RootDispNS != 1_500_000 ||
		s.SysJitterNS != 2000 || s.ClkWanderPPB != 4 || s.TC != 6 || s.MinTC != 3 || !s.HasTAI || s.TAI != 37 ||
		s.SysPeer != 7 || s.Version != "ntpd ntpsec-1.2.2, x" || s.RefTimeNS != (0xeeb125e0-ntpEpochOffset)*1e9+5e8 {
		t.Errorf("system %+v", s)
	}
	if p.OffsetNS != 500_000 || p.DelayNS != 250_000 || p.JitterNS != 10_000 || p.Reach != 255 || p.HPoll != 6 ||
		p.SelectionName != "sys.peer" || p.Association != 7 {
		t.Errorf("peer %+v", p)
	}
}

// TestNtpdBadReplies: each kind of bad reply is one error naming the daemon
// and one count, and the next Status (a good ntpd again) succeeds.
func TestNtpdBadReplies(t *testing.T) {
	cases := []struct {
		name    string
		change  func(op uint8, assoc, seq uint16, std [][]byte) [][]byte
		wantErr error  // nil: Status succeeds
		counter string // which counter counts it
		msg     string
	}{
		{"error reply", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 0 {
				return [][]byte{ctlPacket(0xc2, seq, 0x0700, 0, 0, "")}
			}
			return std
		}, ErrNtpdErrorReply, "error", "read system variables: error reply: access denied (restrict)"},
		{"shorter than the header", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			return [][]byte{std[0][:7]}
		}, ErrNtpdTruncated, "truncated", "read status: truncated reply: 7 bytes"},
		{"data shorter than its count", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 0 {
				return [][]byte{std[0][:40]}
			}
			return std
		}, ErrNtpdTruncated, "truncated", "declares"},
		{"a late reply to an earlier request first", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 1 {
				return append([][]byte{ctlPacket(0x81, seq-1, 0x0615, 0, 0, "\x00\x07\x96\x1a")}, std...)
			}
			return std
		}, nil, "stale", ""},
		{"fragments in reverse order", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 7 {
				return [][]byte{ctlPacket(0x82, seq, 0x961a, 7, 40, peerVars[40:]), ctlPacket(0xa2, seq, 0x961a, 7, 0, peerVars[:40])}
			}
			return std
		}, nil, "", ""},
		{"overlapping fragments", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 7 {
				return [][]byte{ctlPacket(0xa2, seq, 0x961a, 7, 0, peerVars[:40]), ctlPacket(0x82, seq, 0x961a, 7, 30, peerVars[30:])}
			}
			return std
		}, ErrNtpdMalformed, "malformed", "read variables of association 7: malformed reply: fragment at 30+"},
		{"last fragment lost", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 7 {
				return [][]byte{ctlPacket(0xa2, seq, 0x961a, 7, 0, peerVars[:40])}
			}
			return std
		}, os.ErrDeadlineExceeded, "timeout", "incomplete reply: 1 fragments, not the last"},
		{"no reply", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			return nil
		}, os.ErrDeadlineExceeded, "timeout", "read status: no reply within 1s"},
		{"another opcode", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			return [][]byte{ctlPacket(0x82, seq, 0x0615, 0, 0, sysVars)}
		}, ErrNtpdMalformed, "malformed", "opcode 2 answers opcode 1"},
		{"not mode 6", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			p := std[0]
			p[0] = 0x23
			return [][]byte{p}
		}, ErrNtpdMalformed, "malformed", "mode 3"},
		{"association list of odd length", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 1 {
				return [][]byte{ctlPacket(0x81, seq, 0x0615, 0, 0, "\x00\x07\x96")}
			}
			return std
		}, ErrNtpdMalformed, "malformed", "association list of 3 octets"},
		{"system variables lack offset", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 0 {
				return [][]byte{ctlPacket(0x82, seq, 0x0615, 0, 0, strings.Replace(sysVars, "offset=-0.012345,", "", 1))}
			}
			return std
		}, ErrNtpdMalformed, "malformed", "system variables lack offset"},
		{"a garbled value the monitor needs", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 7 {
				return [][]byte{ctlPacket(0x82, seq, 0x961a, 7, 0, strings.Replace(peerVars, "delay=0.25", "delay=0.\x0425", 1))}
			}
			return std
		}, ErrNtpdMalformed, "malformed", "association 7 lack delay"},
		{"a number that is not one", func(op uint8, assoc, seq uint16, std [][]byte) [][]byte {
			if op == 2 && assoc == 7 {
				return [][]byte{ctlPacket(0x82, seq, 0x961a, 7, 0, strings.Replace(peerVars, "jitter=0.01", "jitter=fast", 1))}
			}
			return std
		}, ErrNtpdMalformed, "malformed", `association 7: jitter="fast"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn := &ctlConn{reply: scripted(c.change)}
			m := fakeNtpd(conn)
			_, err := m.Status(t.Context())
			if c.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
			} else if !errors.Is(err, c.wantErr) || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "ntpd 127.0.0.1:123: ") {
				t.Fatalf("error %v, want %v with %q", err, c.wantErr, c.msg)
			}
			counts := map[string]uint64{"stale": m.Stale.Load(), "error": m.ErrorReplies.Load(), "truncated": m.Truncated.Load(),
				"malformed": m.Malformed.Load(), "timeout": m.Timeouts.Load()}
			for k, v := range counts {
				if want := uint64(0); k == c.counter {
					if v != 1 {
						t.Errorf("%s counted %d, want 1", k, v)
					}
				} else if v != want {
					t.Errorf("%s counted %d, want 0", k, v)
				}
			}
			// The daemon heals: the monitor goes on.
			conn.reply = scripted(nil)
			conn.queue = nil
			if st, err := m.Status(t.Context()); err != nil || st.System == nil || len(st.Peers) != 1 {
				t.Fatalf("after %s: %+v %v", c.name, st, err)
			}
		})
	}
}

func TestParseCtlVars(t *testing.T) {
	vars, garbled := parseCtlVars([]byte("a=1, b = \"x, y\" ,\r\n flag, ,c=\x01bad, \"q\"=1, d=\"open, e=2"), nil)
	want := []ctlVar{{"a", "1"}, {"b", "x, y"}, {"flag", ""}}
	if len(vars) != len(want) || garbled != 3 {
		t.Fatalf("vars %q garbled %d", vars, garbled)
	}
	for i := range want {
		if vars[i] != want[i] {
			t.Errorf("var %d %q, want %q", i, vars[i], want[i])
		}
	}
}

func TestNtpTimestampEras(t *testing.T) {
	for _, c := range []struct {
		v    string
		want int64
	}{
		{"0x00000000.00000000", 0},
		{"0xeeb125e0.00000000", (0xeeb125e0 - ntpEpochOffset) * 1e9},
		{"00000001.80000000", (1<<32+1-ntpEpochOffset)*1e9 + 5e8}, // era 1: 2036-02-07T06:28:17.5Z
	} {
		r := varReader{vars: []ctlVar{{"t", c.v}}}
		if got := r.timestamp("t", true); got != c.want || r.err != nil {
			t.Errorf("%s: %d %v, want %d", c.v, got, r.err, c.want)
		}
	}
}
