package sockts

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

const (
	goldenSec   = 0x6b02d3a3
	goldenRxNS  = 0x3a5b6746
	goldenTxNS  = 0x3a5b5e97
	goldenRx    = goldenSec*1_000_000_000 + goldenRxNS
	goldenTx    = goldenSec*1_000_000_000 + goldenTxNS
	enomsg      = 42
	scmTstampSn = 0
)

func readHex(t testing.TB, name string) []byte {
	t.Helper()
	s, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(s)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ilp32 builds a 32-bit ARM control buffer: 12-byte headers, 4-byte alignment.
func ilp32(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = append(out, m...)
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	return out
}

func ilp32Msg(level, typ uint32, data []byte) []byte {
	h := make([]byte, 12, 12+len(data))
	binary.LittleEndian.PutUint32(h[0:], uint32(12+len(data)))
	binary.LittleEndian.PutUint32(h[4:], level)
	binary.LittleEndian.PutUint32(h[8:], typ)
	return append(h, data...)
}

func scmTimestamping64(sw, hw int64) []byte {
	d := make([]byte, 48)
	binary.LittleEndian.PutUint64(d[0:], uint64(sw/1e9))
	binary.LittleEndian.PutUint64(d[8:], uint64(sw%1e9))
	binary.LittleEndian.PutUint64(d[32:], uint64(hw/1e9))
	binary.LittleEndian.PutUint64(d[40:], uint64(hw%1e9))
	return d
}

// after2038 is 2040-01-01T00:00:00.5Z in Unix nanoseconds.
const after2038 = 2208988800_500_000_000

func scmTimestamping32(sw int64) []byte {
	d := make([]byte, 24)
	binary.LittleEndian.PutUint32(d[0:], uint32(sw/1e9))
	binary.LittleEndian.PutUint32(d[4:], uint32(sw%1e9))
	return d
}

func extendedErr(key uint32) []byte {
	d := make([]byte, 32) // sock_extended_err + the offender's sockaddr_in
	binary.LittleEndian.PutUint32(d[0:], enomsg)
	d[4] = eeOriginTimestamp
	binary.LittleEndian.PutUint32(d[8:], scmTstampSn)
	binary.LittleEndian.PutUint32(d[12:], key)
	return d
}

func TestParseGolden(t *testing.T) {
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("golden vectors are little-endian")
	}
	cases := []struct {
		name   string
		layout Layout
		oob    []byte
		want   Control
	}{
		{"rx lp64 (captured)", LayoutLP64, readHex(t, "rx_lp64.hex"), Control{Software: goldenRx}},
		{"tx lp64 (captured)", LayoutLP64, readHex(t, "tx_lp64.hex"), Control{Software: goldenTx, HaveTxKey: true}},
		{"rx ilp32", LayoutILP32, ilp32(ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(goldenRx, 0))), Control{Software: goldenRx}},
		{"tx ilp32", LayoutILP32, ilp32(ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(goldenTx, 0)), ilp32Msg(solIP, ipRecvErr, extendedErr(7))),
			Control{Software: goldenTx, HaveTxKey: true, TxKey: 7}},
		{"rx ilp32 old 32-bit timespec", LayoutILP32, ilp32(ilp32Msg(solSocket, soTimestampingOld, scmTimestamping32(goldenRx))), Control{Software: goldenRx}},
		// 2040-01-01T00:00:00.5Z: past 2038 a 32-bit time_t has wrapped negative.
		{"rx ilp32 old 32-bit timespec after 2038", LayoutILP32, ilp32(ilp32Msg(solSocket, soTimestampingOld, scmTimestamping32(after2038))), Control{Software: after2038}},
		{"hardware ilp32", LayoutILP32, ilp32(ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(0, 1234567890123))), Control{Hardware: 1234567890123}},
		{"ipv6 tx ilp32", LayoutILP32, ilp32(ilp32Msg(solIPv6, ipv6RecvErr, extendedErr(3)), ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(goldenTx, 0))),
			Control{Software: goldenTx, HaveTxKey: true, TxKey: 3}},
		{"unknown message skipped", LayoutILP32, ilp32(ilp32Msg(solSocket, 29, make([]byte, 16)), ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(goldenRx, 0))), Control{Software: goldenRx}},
		{"empty", LayoutLP64, nil, Control{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got Control
			if err := c.layout.Parse(c.oob, &got); err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Fatalf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	rx := readHex(t, "rx_lp64.hex")
	for name, oob := range map[string][]byte{
		"length beyond buffer": rx[:40],
		"length below header":  append([]byte{8, 0, 0, 0, 0, 0, 0, 0}, rx[8:]...),
		"short timestamping":   ilp32(ilp32Msg(solSocket, soTimestampingNew, make([]byte, 20))),
		"short extended error": ilp32(ilp32Msg(solIP, ipRecvErr, make([]byte, 8))),
	} {
		layout := LayoutLP64
		if !strings.HasPrefix(name, "length") {
			layout = LayoutILP32
		}
		var c Control
		if err := layout.Parse(oob, &c); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNativeLayoutMatchesKernel checks the layout against x/sys's Cmsghdr on the
// architecture the test runs on (amd64 here, arm under qemu in CI).
func TestNativeLayoutMatchesKernel(t *testing.T) {
	l := NativeLayout()
	if int(unsafe.Sizeof(unix.Cmsghdr{})) != l.HeaderLen || unix.CmsgLen(0) != l.HeaderLen || unix.CmsgSpace(1) != l.HeaderLen+l.Align {
		t.Fatalf("layout %+v; Cmsghdr %d bytes, CmsgLen(0) %d, CmsgSpace(1) %d", l, unsafe.Sizeof(unix.Cmsghdr{}), unix.CmsgLen(0), unix.CmsgSpace(1))
	}
	if unsafe.Sizeof(unix.SockExtendedErr{}) != sockExtendedErrLen {
		t.Fatalf("sock_extended_err is %d bytes", unsafe.Sizeof(unix.SockExtendedErr{}))
	}
}

func TestParseDoesNotAllocate(t *testing.T) {
	tx := readHex(t, "tx_lp64.hex")
	var c Control
	if n := testing.AllocsPerRun(1000, func() { LayoutLP64.Parse(tx, &c) }); n != 0 {
		t.Fatalf("Parse allocates %v times", n)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(readHex(f, "rx_lp64.hex"), true)
	f.Add(readHex(f, "tx_lp64.hex"), true)
	f.Add(ilp32(ilp32Msg(solSocket, soTimestampingNew, scmTimestamping64(goldenTx, 0)), ilp32Msg(solIP, ipRecvErr, extendedErr(7))), false)
	f.Add(ilp32(ilp32Msg(solSocket, soTimestampingOld, scmTimestamping32(goldenRx))), false)
	f.Fuzz(func(t *testing.T, oob []byte, lp64 bool) {
		l := LayoutILP32
		if lp64 {
			l = LayoutLP64
		}
		var c Control
		err := l.Parse(oob, &c)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("unexpected error kind: %v", err)
		}
		if err == nil && len(oob) < l.HeaderLen && (c != Control{}) {
			t.Fatalf("found %+v in %d bytes", c, len(oob))
		}
	})
}

func BenchmarkParse(b *testing.B) {
	tx := readHex(b, "tx_lp64.hex")
	var c Control
	b.ReportAllocs()
	for b.Loop() {
		if err := LayoutLP64.Parse(tx, &c); err != nil {
			b.Fatal(err)
		}
	}
}
