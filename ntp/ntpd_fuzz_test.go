package ntp

import (
	"encoding/binary"
	"strings"
	"testing"
)

// FuzzNtpdReply feeds datagrams (each prefixed by its 2-byte length) to the
// reassembly of one reply, and its data to the variable-list parser and the
// decoders of the system's and an association's variables. Nothing may
// panic; a completed reply's data is exactly as long as its last fragment
// says; parsed names and values are clean text. Seeded with the replies
// captured from NTPsec 1.2.2.
func FuzzNtpdReply(f *testing.F) {
	var byReq = map[[2]uint16][]byte{}
	for _, d := range readGolden(f) {
		k := [2]uint16{uint16(d.op), d.assoc}
		byReq[k] = binary.BigEndian.AppendUint16(byReq[k], uint16(len(d.pkt)))
		byReq[k] = append(byReq[k], d.pkt...)
	}
	for _, b := range byReq {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var a ctlAssembly
		first := true
		for len(in) >= 2 {
			n := int(binary.BigEndian.Uint16(in))
			in = in[2:]
			if n > len(in) {
				n = len(in)
			}
			pkt := in[:n]
			in = in[n:]
			if first {
				if len(pkt) < ctlHeaderLen {
					return
				}
				a.reset(binary.BigEndian.Uint16(pkt[2:]), pkt[1]&0x1f, binary.BigEndian.Uint16(pkt[6:]))
				first = false
			}
			done, err := a.add(pkt)
			if err != nil {
				continue // refused (or stale): the exchange would end or skip it
			}
			if !done {
				continue
			}
			if len(a.data) != a.end {
				t.Fatalf("reply of %d octets, its last fragment ends at %d", len(a.data), a.end)
			}
			vars, _ := parseCtlVars(a.data, nil)
			for _, v := range vars {
				if v.name == "" || strings.ContainsAny(v.name, " \t\r\n\",=") || strings.ContainsAny(v.value, "\x00\r\n") {
					t.Fatalf("parsed %q", v)
				}
			}
			systemOf(a.status, vars)
			peerOf(a.assoc, a.status, vars)
			associationsOf(a.data)
			return
		}
	})
}
