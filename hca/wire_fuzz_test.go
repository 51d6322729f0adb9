package hca

import (
	"bytes"
	"testing"
)

// FuzzDecode: no input panics, and whatever decodes with the key re-encodes
// to the same bytes (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	for i := range goldenMessages {
		b := goldenBytes(f, i)
		f.Add(b)
		f.Add(b[:len(b)-1])
		f.Add(b[:4])
	}
	f.Add([]byte{})
	f.Add([]byte("HC\x02"))
	c := NewCodec(testKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := c.Decode(b)
		if err != nil {
			return
		}
		if got := c.Append(nil, m); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding %+v:\n got %x\nwant %x", m, got, b)
		}
	})
}

// FuzzRoundTrip: every message the format can carry (pings without a
// responder clock) survives encoding and decoding.
func FuzzRoundTrip(f *testing.F) {
	for _, g := range goldenMessages {
		m := g.msg
		f.Add(uint8(m.Type), m.Session, m.From, m.To, m.Seq, m.Send, m.Remote)
	}
	c := NewCodec(testKey)
	f.Fuzz(func(t *testing.T, typ uint8, session uint64, from, to uint32, seq uint64, send, remote int64) {
		m := Message{Type: MsgType(typ%2 + 1), Session: session, From: from, To: to, Seq: seq, Send: send, Remote: remote}
		if m.Type == MsgPing {
			m.Remote = 0
		}
		got, err := c.Decode(c.Append(nil, m))
		if err != nil || got != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, got, err)
		}
	})
}
