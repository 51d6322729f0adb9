package ptp

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/facebook/time/ptp/protocol"
)

func goldenPortDataSet(t testing.TB) []byte {
	s, err := os.ReadFile("testdata/port_data_set_ptp4l311.hex")
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(s)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodePortDataSetGolden(t *testing.T) {
	p, err := DecodePortDataSet(goldenPortDataSet(t))
	if err != nil {
		t.Fatal(err)
	}
	want := PortDataSet{
		PortIdentity: protocol.PortIdentity{ClockIdentity: 0x2a475bfffe565637, PortNumber: 1},
		PortState:    protocol.PortStateUncalibrated, AnnounceReceiptTimeout: 3, DelayMechanism: 1, VersionNumber: 2,
	}
	if p != want {
		t.Fatalf("got  %+v\nwant %+v", p, want)
	}
	if p.PortIdentity.String() != "2a475b.fffe.565637-1" || p.PortState.String() != "UNCALIBRATED" {
		t.Fatalf("rendered %s %s", p.PortIdentity, p.PortState)
	}
}

func TestDecodePortDataSetBad(t *testing.T) {
	g := goldenPortDataSet(t)
	for i := 0; i < len(g); i++ {
		if _, err := DecodePortDataSet(g[:i]); err == nil {
			t.Fatalf("a %d-byte prefix decoded", i)
		}
	}
	other := append([]byte(nil), g...)
	other[53] = 0x01 // CURRENT_DATA_SET's id
	if _, err := DecodePortDataSet(other); err == nil {
		t.Fatal("another management id decoded as PORT_DATA_SET")
	}
	if _, err := DecodePortDataSet(nil); !errors.Is(err, ErrShortTLV) {
		t.Fatalf("empty: %v", err)
	}
}

func TestRequestIsAValidManagementGet(t *testing.T) {
	m := NewMonitor("/nonexistent", 7, 0)
	b, err := m.request(protocol.IDPortDataSet)
	if err != nil {
		t.Fatal(err)
	}
	// header 34 + target/hops/action 14 + TLV head 4 + id 2
	if len(b) != 54 || b[4] != 7 || b[46] != byte(protocol.GET) || b[50] != 0 || b[51] != 2 || b[52] != 0x20 || b[53] != 0x04 {
		t.Fatalf("request %x", b)
	}
	if b[30] != 0 || b[31] != 1 { // sequence id 1
		t.Fatalf("sequence %x", b[30:32])
	}
}

func FuzzDecodePortDataSet(f *testing.F) {
	f.Add(goldenPortDataSet(f))
	f.Add(goldenPortDataSet(f)[:60])
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := DecodePortDataSet(b)
		if err == nil && (len(b) < 54+PortDataSetSize || p.VersionNumber > 15) {
			t.Fatalf("decoded %+v from %d bytes", p, len(b))
		}
	})
}
