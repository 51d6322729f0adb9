package ptp

import (
	"bytes"
	"encoding/hex"
	"net"
	"testing"
	"time"

	"github.com/facebook/time/ptp/protocol"
)

var testMAC = net.HardwareAddr{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}

func TestL2FrameRoundTrip(t *testing.T) {
	msg := syncMsg(protocol.PortIdentity{ClockIdentity: 0x02005efffe102030, PortNumber: 1}, 9, true, 0, 0)
	f, err := l2Frame(testMAC, msg)
	if err != nil {
		t.Fatal(err)
	}
	// 14-byte header, 44-byte message, padded to the 60-byte minimum frame.
	want := "011b19000000" + "02005e102030" + "88f7"
	if got := hex.EncodeToString(f[:14]); got != want {
		t.Fatalf("header %s, want %s", got, want)
	}
	if len(f) != 60 {
		t.Fatalf("frame of %d bytes, want 60 (padded)", len(f))
	}
	b, ok := l2Payload(f)
	if !ok || !bytes.Equal(b, msg) {
		t.Fatalf("payload %x (ok %v), want the %d-byte message %x", b, ok, len(msg), msg)
	}
}

func TestL2Payload(t *testing.T) {
	msg := syncMsg(protocol.PortIdentity{ClockIdentity: 1, PortNumber: 1}, 7, true, 0, 0)
	hdr := []byte{0x01, 0x1b, 0x19, 0, 0, 0, 2, 0, 0x5e, 1, 2, 3}
	tagged := append(append(append([]byte{}, hdr...), 0x81, 0x00, 0x00, 0x05, 0x88, 0xf7), msg...)
	if b, ok := l2Payload(tagged); !ok || !bytes.Equal(b, msg) {
		t.Errorf("802.1Q-tagged frame: %x %v", b, ok)
	}
	ipv4 := append(append(append([]byte{}, hdr...), 0x08, 0x00), msg...)
	if _, ok := l2Payload(ipv4); ok {
		t.Error("an IPv4 frame taken as PTP")
	}
	if _, ok := l2Payload(hdr); ok {
		t.Error("a 12-byte frame taken")
	}
	// A message length beyond the frame leaves the payload whole (the Slave
	// then refuses it as short).
	lying := append(append(append([]byte{}, hdr...), 0x88, 0xf7), msg...)
	lying[14+2], lying[14+3] = 0x01, 0x00
	if b, ok := l2Payload(lying); !ok || len(b) != len(msg) {
		t.Errorf("frame with messageLength 256: %d bytes, ok %v", len(b), ok)
	}
}

func FuzzL2Payload(f *testing.F) {
	msg := syncMsg(protocol.PortIdentity{ClockIdentity: 1, PortNumber: 1}, 7, true, 0, 0)
	fr, _ := l2Frame(testMAC, msg)
	f.Add(fr)
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, frame []byte) {
		b, ok := l2Payload(frame)
		if !ok {
			return
		}
		if len(b) > len(frame)-14 {
			t.Fatalf("payload of %d bytes from a %d-byte frame", len(b), len(frame))
		}
		var s Slave
		now := time.Unix(1_795_000_000, 0)
		s.Event(b, 1, now)
		s.General(b, now)
	})
}
