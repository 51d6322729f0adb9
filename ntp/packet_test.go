package ntp

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"
)

const (
	goldenCookie = uint64(0x3b1b663ab0fea135)
	goldenT1     = int64(1795347499209026885)
	goldenT4     = int64(1795347499209170175)
)

func golden(t testing.TB) []byte {
	t.Helper()
	s, err := os.ReadFile("testdata/chronyd43_reply.hex")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(s)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseGoldenChronydReply(t *testing.T) {
	var h Header
	if err := ParseReply(golden(t), goldenCookie, 0, goldenT1, &h); err != nil {
		t.Fatal(err)
	}
	want := Header{Leap: 0, Version: 4, Stratum: 1, Poll: 0, Precision: -26, RefID: 0x7f7f0101,
		ReferenceNS: 1795347497212822868, ReceiveNS: 1795347499209028836, TransmitNS: 1795347499209144336,
		ReceiveRaw: 0xeead52ab3582e9ef}
	if h != want {
		t.Fatalf("got  %+v\nwant %+v", h, want)
	}
	if h.RefIDString() != "7F7F0101" {
		t.Fatalf("refid %q", h.RefIDString())
	}
	for _, c := range []struct {
		h    Header
		want string
	}{{Header{Stratum: 1, RefID: 0x47505300}, "GPS"}, {Header{Stratum: 2, RefID: 0x0a000001}, "10.0.0.1"}} {
		if got := c.h.RefIDString(); got != c.want {
			t.Errorf("refid %08x stratum %d: %q", c.h.RefID, c.h.Stratum, got)
		}
	}
	if off, d := Offset(goldenT1, h.ReceiveNS, h.TransmitNS, goldenT4), Delay(goldenT1, h.ReceiveNS, h.TransmitNS, goldenT4); off != 11944 || d != 27790 {
		t.Fatalf("offset %d delay %d; the capture gave 11944 and 27790", off, d)
	}
}

// mutate returns the golden reply with f applied.
func mutate(t *testing.T, f func(b []byte)) []byte {
	b := golden(t)
	f(b)
	return b
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want Reject
	}{
		{"short", golden(t)[:47], RejectShort},
		{"client mode", mutate(t, func(b []byte) { b[0] = 0x23 }), RejectMode},
		{"version 0", mutate(t, func(b []byte) { b[0] = 0x04 }), RejectVersion},
		{"version 5", mutate(t, func(b []byte) { b[0] = 0x2c }), RejectVersion},
		{"spoofed origin", mutate(t, func(b []byte) { b[31] ^= 1 }), RejectOrigin},
		{"kiss RATE", mutate(t, func(b []byte) { b[1] = 0; copy(b[12:16], "RATE") }), RejectKoD},
		{"leap alarm", mutate(t, func(b []byte) { b[0] = 0xe4 }), RejectUnsynced},
		{"stratum 16", mutate(t, func(b []byte) { b[1] = 16 }), RejectUnsynced},
		{"zero transmit", mutate(t, func(b []byte) { clear(b[40:48]) }), RejectZeroTimestamp},
		{"zero receive", mutate(t, func(b []byte) { clear(b[32:40]) }), RejectZeroTimestamp},
		{"transmit before receive", mutate(t, func(b []byte) { copy(b[40:48], b[32:40]); b[47]--; b[46]-- }), RejectBogus},
		{"garbage trailer", append(golden(t), 1, 2, 3), RejectMalformed},
		// dispersion_ns was -9223372036854775793 for this one
		{"precision 2^34 s", mutate(t, func(b []byte) { b[3] = 34 }), RejectField},
		{"precision 2^1 s", mutate(t, func(b []byte) { b[3] = 1 }), RejectField},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var h Header
			err := ParseReply(c.b, goldenCookie, 0, goldenT1, &h)
			if got := RejectOf(err); got != c.want {
				t.Fatalf("reject %v (%v), want %v", got, err, c.want)
			}
			if c.want == RejectKoD && h.KissCode != "RATE" {
				t.Fatalf("kiss code %q", h.KissCode)
			}
		})
	}
}

func TestParseInterleavedReply(t *testing.T) {
	const xcookie = uint64(0x1122334455667788)
	b := mutate(t, func(b []byte) { binary.BigEndian.PutUint64(b[24:], xcookie) })
	var h Header
	if err := ParseReply(b, goldenCookie, 0, goldenT1, &h); RejectOf(err) != RejectOrigin {
		t.Fatalf("interleaved origin accepted for a basic request: %v", err)
	}
	if err := ParseReply(b, goldenCookie, xcookie, goldenT1, &h); err != nil || !h.Interleaved {
		t.Fatalf("interleaved reply: %v %+v", err, h)
	}
	// Its transmit timestamp (the previous reply's) may precede its receive.
	early := mutate(t, func(b []byte) { binary.BigEndian.PutUint64(b[24:], xcookie); copy(b[40:48], b[16:24]) })
	if err := ParseReply(early, goldenCookie, xcookie, goldenT1, &h); err != nil {
		t.Fatalf("interleaved reply with an earlier transmit timestamp: %v", err)
	}
}

func TestNTPTimeConversion(t *testing.T) {
	for _, ns := range []int64{0, 1, 999_999_999, goldenT1, 2_085_978_495_999_999_999, 2_085_978_496_000_000_001, 4_000_000_000_000_000_000} {
		sec, frac := FromUnixNS(ns)
		if got := ToUnixNS(sec, frac, ns); got != ns {
			t.Errorf("%d -> %d.%d -> %d", ns, sec, frac, got)
		}
	}
	// 2036-02-07T06:28:16Z is NTP era 1, second 0: the same bits as 1900 and as
	// 2172. The pivot picks the era.
	if got := ToUnixNS(0, 0, 2_085_978_400_000_000_000); got != 2_085_978_496_000_000_000 {
		t.Errorf("era 1 start read as %d", got)
	}
	if got := ToUnixNS(0xffffffff, 0, 2_085_978_500_000_000_000); got != 2_085_978_495_000_000_000 {
		t.Errorf("end of era 0 read as %d", got)
	}
	if shortToNS(0x00010000) != 1_000_000_000 || shortToNS(0x00008000) != 500_000_000 {
		t.Error("NTP short format")
	}
}

func TestNewRequest(t *testing.T) {
	b, err := NewRequest(nil, 0x0102030405060708, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 48 || b[0] != 0x23 || binary.BigEndian.Uint64(b[40:]) != 0x0102030405060708 {
		t.Fatalf("request %x", b)
	}
	for i, v := range b[1:40] {
		if v != 0 {
			t.Fatalf("byte %d of the request is %#x: a client request reveals nothing else", i+1, v)
		}
	}
}

func TestParseReplyDoesNotAllocate(t *testing.T) {
	b := golden(t)
	var h Header
	if n := testing.AllocsPerRun(1000, func() { ParseReply(b, goldenCookie, 0, goldenT1, &h) }); n != 0 {
		t.Fatalf("ParseReply allocates %v times", n)
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add(golden(f), goldenCookie)
	f.Add(golden(f)[:40], uint64(0))
	f.Add(append(golden(f), make([]byte, 20)...), goldenCookie)
	coarse := golden(f)
	coarse[3] = 34 // precision 2^34 s: its dispersion overflowed int64 ns
	f.Add(coarse, goldenCookie)
	f.Fuzz(func(t *testing.T, b []byte, cookie uint64) {
		var h Header
		err := ParseReply(b, cookie, 0, goldenT1, &h)
		if err == nil {
			if h.Stratum == 0 || h.Stratum >= 16 || h.TransmitNS < h.ReceiveNS || binary.BigEndian.Uint64(b[24:32]) != cookie || b[0]&7 != 4 || h.Precision > MaxPrecision {
				t.Fatalf("accepted a bad reply %x: %+v", b, h)
			}
			// Every figure a sample is made of stays within int64 ns.
			if d := dispersion(h.Precision, goldenT1, goldenT1+1_000_000_000); d < 0 || h.RootDelayNS < 0 || h.RootDispNS < 0 {
				t.Fatalf("reply %x: dispersion %d, root delay %d, root dispersion %d", b, d, h.RootDelayNS, h.RootDispNS)
			}
		} else if RejectOf(err) == RejectNone {
			t.Fatalf("error without a reason: %v", err)
		}
	})
}

func BenchmarkParseReply(b *testing.B) {
	pkt := golden(b)
	var h Header
	b.ReportAllocs()
	for b.Loop() {
		if err := ParseReply(pkt, goldenCookie, 0, goldenT1, &h); err != nil {
			b.Fatal(err)
		}
	}
}
