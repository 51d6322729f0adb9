package hca

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/monagent/monagent/timebase"
)

var testKey = []byte("monagent-hca-test-key-0123456789")

// Golden vectors of wire version 2 (epochs in the header): the MACs were
// computed independently with
// `xxd -r -p | openssl dgst -sha256 -hmac monagent-hca-test-key-0123456789`
// and checked with Python's hmac module, over everything before the MAC.
// The ping names no peer epoch (its sender has not heard from rank 2 yet);
// every answer echoes its request's epoch.
var goldenMessages = []struct {
	name string
	msg  message
	hex  string
}{
	{
		name: "ping",
		msg:  message{Type: msgPing, Session: 0x0123456789abcdef, Epoch: 0x3c1f6a0e9b2d4857, From: 1, To: 2, Seq: 42, Send: 1_000_000_007},
		hex: "4843" + "02" + "01" + "0123456789abcdef" + "3c1f6a0e9b2d4857" + "0000000000000000" + "00000001" + "00000002" + "000000000000002a" +
			"000000003b9aca07" + "0000000000000000" +
			"3e8891920e4c308d179e0f300e9b4000082140ea5e8fbd21c59705f1d46c4a4b",
	},
	{
		name: "pong",
		msg:  message{Type: msgPong, Session: 0x0123456789abcdef, Epoch: 0x71d2c0aa5e6b9f13, PeerEpoch: 0x3c1f6a0e9b2d4857, From: 2, To: 1, Seq: 42, Send: 1_000_000_007, Remote: -5_000_000_123},
		hex: "4843" + "02" + "02" + "0123456789abcdef" + "71d2c0aa5e6b9f13" + "3c1f6a0e9b2d4857" + "00000002" + "00000001" + "000000000000002a" +
			"000000003b9aca07" + "fffffffed5fa0d85" +
			"43e0ec96861bce47fe39a293a0f106a2404c547b55830c0773458ed2092ea73f",
	},
	{
		name: "run",
		msg:  message{Type: msgRun, Session: 0x0123456789abcdef, Epoch: 0x0a4b8c2d6e1f3a5b, PeerEpoch: 0x3c1f6a0e9b2d4857, From: 0, To: 1, Seq: 43, Target: 2},
		hex: "4843" + "02" + "03" + "0123456789abcdef" + "0a4b8c2d6e1f3a5b" + "3c1f6a0e9b2d4857" + "00000000" + "00000001" + "000000000000002b" +
			"0000000000000000" + "0000000000000000" + "00000002" + "00000000" +
			"c0842f6e0f2f8d4fbce823e8bd0c0322fb4f80c5820c2529ad69e2452746edb8",
	},
	{
		name: "report",
		msg: message{Type: msgReport, Session: 0x0123456789abcdef, Epoch: 0x3c1f6a0e9b2d4857, PeerEpoch: 0x0a4b8c2d6e1f3a5b, From: 1, To: 0, Seq: 43, Target: 2,
			Send: 1_000_000_007, Remote: -5_000_000_123, Recv: 1_000_050_011},
		hex: "4843" + "02" + "04" + "0123456789abcdef" + "3c1f6a0e9b2d4857" + "0a4b8c2d6e1f3a5b" + "00000001" + "00000000" + "000000000000002b" +
			"000000003b9aca07" + "fffffffed5fa0d85" + "00000002" + "00000000" + "000000003b9b8d5b" +
			"95a4f31a66c44f83537e1eb783453444272c6fda76da035d79058c77b896a89e",
	},
	{
		name: "report lost",
		msg:  message{Type: msgReport, Session: 0x0123456789abcdef, Epoch: 0x3c1f6a0e9b2d4857, PeerEpoch: 0x0a4b8c2d6e1f3a5b, From: 1, To: 0, Seq: 44, Target: 2, Lost: true},
		hex: "4843" + "02" + "04" + "0123456789abcdef" + "3c1f6a0e9b2d4857" + "0a4b8c2d6e1f3a5b" + "00000001" + "00000000" + "000000000000002c" +
			"0000000000000000" + "0000000000000000" + "00000002" + "00000001" + "0000000000000000" +
			"56cf5137b488145fd7daf8f32c205ae3e9516ddf390bbd884a4575a6fe70a549",
	},
	{
		name: "model",
		msg: message{Type: msgModel, Session: 0x0123456789abcdef, Epoch: 0x0a4b8c2d6e1f3a5b, PeerEpoch: 0x5f9e3d2c1b0a4938, From: 0, To: 3, Seq: 45, Send: 7,
			Model: timebase.LinearModel{Origin: 1_000_000_000, Intercept: -2_500_000_000, Slope: 12.5e-6, N: 20,
				MeanX: 1_100_000_000, ResidualNS: 3.25, SlopeErr: 1.5e-9, FloorNS: 40}},
		hex: "4843" + "02" + "05" + "0123456789abcdef" + "0a4b8c2d6e1f3a5b" + "5f9e3d2c1b0a4938" + "00000000" + "00000003" + "000000000000002d" +
			"0000000000000007" + "0000000000000000" +
			"000000003b9aca00" + "ffffffff6afd0700" + "3eea36e2eb1c432d" + "0000000000000014" +
			"000000004190ab00" + "400a000000000000" + "3e19c511dc3a41df" + "0000000000000028" +
			"419783fda6ffcd9a610df5c134d62bcb1818b5ab79860e086c4663417861bfea",
	},
	{
		name: "model-ack",
		msg:  message{Type: msgModelAck, Session: 0x0123456789abcdef, Epoch: 0x5f9e3d2c1b0a4938, PeerEpoch: 0x0a4b8c2d6e1f3a5b, From: 3, To: 0, Seq: 45, Send: 7},
		hex: "4843" + "02" + "06" + "0123456789abcdef" + "5f9e3d2c1b0a4938" + "0a4b8c2d6e1f3a5b" + "00000003" + "00000000" + "000000000000002d" +
			"0000000000000007" + "0000000000000000" +
			"f545898151bba6b3c31868a73ec41c294f7d29966df534587171c6e7fb645b83",
	},
}

func goldenBytes(t testing.TB, i int) []byte {
	t.Helper()
	b, err := hex.DecodeString(goldenMessages[i].hex)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeGolden(t *testing.T) {
	for i, g := range goldenMessages {
		t.Run(g.name, func(t *testing.T) {
			want := goldenBytes(t, i)
			if len(want) != wireLen(g.msg.Type) {
				t.Fatalf("golden vector is %d bytes, want %d for a %v", len(want), wireLen(g.msg.Type), g.msg.Type)
			}
			if got := encode(testKey, g.msg); !bytes.Equal(got, want) {
				t.Errorf("Encode:\n got %x\nwant %x", got, want)
			}
			// Append keeps what is already in dst.
			prefix := []byte("xyz")
			if got := newCodec(testKey).append(prefix, g.msg); !bytes.Equal(got[:3], prefix) || !bytes.Equal(got[3:], want) {
				t.Errorf("Append after a prefix: %x", got)
			}
			m, err := decode(testKey, want)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if m != g.msg {
				t.Errorf("Decode: %+v, want %+v", m, g.msg)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	c := newCodec(testKey)
	for _, m := range []message{
		{Type: msgPing, Epoch: 1},
		{Type: msgPing, Session: ^uint64(0), Epoch: ^uint64(0), PeerEpoch: ^uint64(0), From: ^uint32(0), To: ^uint32(0), Seq: ^uint64(0), Send: -1 << 63},
		{Type: msgPong, Session: 7, Epoch: 2, PeerEpoch: 3, From: 3, To: 0, Seq: 1, Send: 1<<63 - 1, Remote: -1},
		{Type: msgPong, Epoch: 9, PeerEpoch: 1, Remote: 123456789012345},
	} {
		b := c.append(nil, m)
		got, err := c.decode(b)
		if err != nil || got != m {
			t.Errorf("round trip of %+v: %+v, %v", m, got, err)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	ping := goldenBytes(t, 0)
	mod := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(ping)) }
	// sign re-MACs a modified header, as a sender with the key would.
	sign := func(h []byte) []byte {
		c := newCodec(testKey)
		c.mac.Write(h[:headerLen])
		return append(h[:headerLen:headerLen], c.mac.Sum(nil)...)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, errMalformed},
		{"short", ping[:3], errMalformed},
		{"truncated", ping[:messageLen-1], errMalformed},
		{"header only", ping[:headerLen], errMalformed},
		{"long", append(bytes.Clone(ping), 0), errMalformed},
		{"bad magic", mod(func(b []byte) []byte { b[0] = 'X'; return b }), errMalformed},
		{"version 1", mod(func(b []byte) []byte { b[2] = 1; return b }), errVersion}, // a peer not upgraded yet
		{"version 3", mod(func(b []byte) []byte { b[2] = 3; return b }), errVersion},
		{"version 0 short", []byte{'H', 'C', 0, 1}, errVersion},
		{"flipped field", mod(func(b []byte) []byte { b[20] ^= 1; return b }), errBadMAC},
		{"flipped epoch", mod(func(b []byte) []byte { b[19] ^= 1; return b }), errBadMAC},
		{"epoch 0", mod(func(b []byte) []byte { clear(b[12:20]); return sign(b) }), errMalformed},
		{"pong echoing no epoch", mod(func(b []byte) []byte { b[3] = byte(msgPong); return sign(b) }), errMalformed},
		{"flipped MAC", mod(func(b []byte) []byte { b[messageLen-1] ^= 0x80; return b }), errBadMAC},
		{"type 9", mod(func(b []byte) []byte { b[3] = 9; return sign(b) }), errType},
		{"type 0", mod(func(b []byte) []byte { b[3] = 0; return sign(b) }), errType},
		{"run of ping length", mod(func(b []byte) []byte { b[3] = byte(msgRun); return sign(b) }), errMalformed},
		{"model-ack with remote", mod(func(b []byte) []byte { b[3] = byte(msgModelAck); b[23] = 1; b[59] = 1; return sign(b) }), errMalformed},
		{"ping with remote", mod(func(b []byte) []byte { b[59] = 1; return sign(b) }), errMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(testKey, tc.b)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Decode: %v, want %v", err, tc.want)
			}
			for _, other := range []error{errMalformed, errVersion, errType, errBadMAC} {
				if other != tc.want && errors.Is(err, other) {
					t.Errorf("Decode error %v also matches %v", err, other)
				}
			}
		})
	}
	// Extension types: fields no sender produces are refused after the MAC.
	resign := func(i int, f func(b []byte)) []byte {
		b := goldenBytes(t, i)
		f(b)
		body := len(b) - macLen
		c := newCodec(testKey)
		c.mac.Write(b[:body])
		return append(b[:body:body], c.mac.Sum(nil)...)
	}
	const run, report, lost, model = 2, 3, 4, 5
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"run burst 17", resign(run, func(b []byte) { b[headerLen+7] = maxBurst + 1 }), errMalformed},
		{"run with send", resign(run, func(b []byte) { b[51] = 1 }), errMalformed},
		{"report status 2", resign(report, func(b []byte) { b[headerLen+7] = 2 }), errMalformed},
		{"lost report with recv", resign(lost, func(b []byte) { b[headerLen+15] = 1 }), errMalformed},
		{"lost report with send", resign(lost, func(b []byte) { b[51] = 1 }), errMalformed},
		{"report echoing no epoch", resign(report, func(b []byte) { clear(b[20:28]) }), errMalformed},
		{"model NaN slope", resign(model, func(b []byte) {
			binary.BigEndian.PutUint64(b[headerLen+16:], math.Float64bits(math.NaN()))
		}), errMalformed},
		{"model slope 2", resign(model, func(b []byte) { binary.BigEndian.PutUint64(b[headerLen+16:], math.Float64bits(2)) }), errMalformed},
		{"model negative residual", resign(model, func(b []byte) { b[headerLen+40] |= 0x80 }), errMalformed},
		{"model infinite slope error", resign(model, func(b []byte) {
			binary.BigEndian.PutUint64(b[headerLen+48:], math.Float64bits(math.Inf(1)))
		}), errMalformed},
		{"model negative points", resign(model, func(b []byte) { b[headerLen+24] = 0xff }), errMalformed},
		{"model negative floor", resign(model, func(b []byte) { b[headerLen+56] = 0xff }), errMalformed},
		{"model with remote", resign(model, func(b []byte) { b[59] = 1 }), errMalformed},
		{"model cut to report length", goldenBytes(t, model)[:wireLen(msgReport)], errMalformed},
		{"model tampered", func() []byte { b := goldenBytes(t, model); b[headerLen+20] ^= 1; return b }(), errBadMAC},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decode(testKey, tc.b); !errors.Is(err, tc.want) {
				t.Fatalf("Decode: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("wrong key", func(t *testing.T) {
		_, err := decode([]byte("another-key-of-thirty-two-bytes!"), ping)
		if !errors.Is(err, errBadMAC) {
			t.Fatalf("Decode with the wrong key: %v, want ErrBadMAC", err)
		}
		if bytes.Contains([]byte(err.Error()), testKey) {
			t.Error("error mentions the key")
		}
	})
}

func TestCodecAllocs(t *testing.T) {
	c := newCodec(testKey)
	buf := make([]byte, 0, maxMessageLen)
	m := goldenMessages[5].msg // a model: the longest
	var err error
	allocs := testing.AllocsPerRun(100, func() {
		buf = c.append(buf[:0], m)
		m, err = c.decode(buf)
	})
	if err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("Append+Decode allocate %v times per message", allocs)
	}
}

func TestReplayWindow(t *testing.T) {
	type step struct {
		seq  uint64
		want bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{1, true}, {2, true}, {3, true}}},
		{"duplicate", []step{{1, true}, {1, false}, {2, true}, {1, false}, {2, false}}},
		{"starts anywhere", []step{{0, true}, {0, false}, {1000, true}, {999, true}, {0, false}}},
		{"out of order within window", []step{{10, true}, {8, true}, {9, true}, {7, true}, {8, false}, {11, true}, {9, false}}},
		{"edge of window", []step{{100, true}, {100 - windowSize + 1, true}, {100 - windowSize, false}, {100 - windowSize + 1, false}}},
		{"jump beyond window", []step{{1, true}, {2, true}, {1 + 2*windowSize, true}, {2, false}, {windowSize + 2, true}, {windowSize + 2, false}}},
		{"exact window jump", []step{{5, true}, {5 + windowSize, true}, {5, false}, {6, true}, {6, false}}},
		{"shift keeps bits", []step{{1, true}, {3, true}, {windowSize + 1, true}, {3, false}, {2, true}, {2, false}, {1, false}}},
		{"max seq", []step{{^uint64(0) - 1, true}, {^uint64(0), true}, {^uint64(0), false}, {^uint64(0) - 1, false}, {^uint64(0) - 2, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w replayWindow
			for i, s := range tc.steps {
				if got := w.Accept(s.seq); got != s.want {
					t.Fatalf("step %d: Accept(%d) = %v, want %v", i, s.seq, got, s.want)
				}
			}
			w.Reset()
			if !w.Accept(tc.steps[0].seq) {
				t.Error("Accept after Reset rejected the first sequence number")
			}
		})
	}
}

// TestReplayWindowModel checks the window against a map of everything seen.
func TestReplayWindowModel(t *testing.T) {
	var w replayWindow
	seen := map[uint64]bool{}
	var top uint64
	x := uint64(12345)
	for i := 0; i < 20000; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		seq := uint64(i/2) + x%100 // mostly rising, with reordering and duplicates
		want := !seen[seq] && (len(seen) == 0 || seq > top || top-seq < windowSize)
		if got := w.Accept(seq); got != want {
			t.Fatalf("step %d: Accept(%d) = %v, want %v (top %d)", i, seq, got, want, top)
		}
		if want {
			seen[seq] = true
			top = max(top, seq)
		}
	}
}

// encode returns the encoding of m with key (a new codec each call; hot paths
// keep a codec and use its append).
func encode(key []byte, m message) []byte {
	return newCodec(key).append(make([]byte, 0, maxMessageLen), m)
}

// decode authenticates and parses b with key; see codec.decode.
func decode(key, b []byte) (message, error) {
	return newCodec(key).decode(b)
}
