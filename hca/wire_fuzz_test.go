package hca

import (
	"bytes"
	"math"
	"testing"

	"github.com/monagent/monagent/timebase"
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
	v1 := goldenBytes(f, 0)
	v1[2] = 1 // a peer of wire version 1, whose header had no epochs
	f.Add(v1)
	c := newCodec(testKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := c.decode(b)
		if err != nil {
			return
		}
		if got := c.append(nil, m); !bytes.Equal(got, b) {
			t.Fatalf("re-encoding %+v:\n got %x\nwant %x", m, got, b)
		}
	})
}

// FuzzRoundTrip: every message the format can carry survives encoding and
// decoding.
func FuzzRoundTrip(f *testing.F) {
	for _, g := range goldenMessages {
		m := g.msg
		f.Add(uint8(m.Type), m.Session, m.Epoch, m.PeerEpoch, m.From, m.To, m.Seq, m.Send, m.Remote, m.Target, m.Recv, m.Model.Slope, m.Model.Intercept)
	}
	c := newCodec(testKey)
	f.Fuzz(func(t *testing.T, typ uint8, session, epoch, peerEpoch uint64, from, to uint32, seq uint64, send, remote int64, target uint32, recv int64, slope float64, intercept int64) {
		m := message{Type: msgType(typ%6 + 1), Session: session, Epoch: max(epoch, 1), PeerEpoch: peerEpoch, From: from, To: to, Seq: seq, Send: send, Remote: remote}
		if m.Type.IsAnswer() {
			m.PeerEpoch = max(peerEpoch, 1) // an answer echoes its request's epoch, never 0
		}
		switch m.Type {
		case msgPing, msgModelAck:
			m.Remote = 0
		case msgRun:
			m.Send, m.Remote, m.Target, m.Burst = 0, 0, target, uint32(seq%(maxBurst+1))
		case msgReport:
			m.Target, m.Recv = target, recv
			if typ&0x80 != 0 {
				m.Lost, m.Send, m.Remote, m.Recv = true, 0, 0, 0
			}
		case msgModel:
			m.Remote = 0
			if math.IsNaN(slope) || math.Abs(slope) > 1 {
				slope = 0
			}
			m.Model = timebase.LinearModel{Origin: recv, Intercept: intercept, Slope: slope, N: int(target >> 1), MeanX: remote,
				ResidualNS: math.Abs(float64(seq % 1000)), SlopeErr: 1e-9, FloorNS: int64(target)}
		}
		got, err := c.decode(c.append(nil, m))
		if err != nil || got != m {
			t.Fatalf("round trip of %+v: %+v, %v", m, got, err)
		}
	})
}
