package marker

import "testing"

// BenchmarkDecoderParse parses a marker with a value, a sender's stamp and
// two tags, as the agent's reader does for every datagram.
func BenchmarkDecoderParse(b *testing.B) {
	var d Decoder
	line := []byte("step value=3.5 mono=123456789012 rank=7 phase=io\n")
	b.ReportAllocs()
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := d.Parse(line); err != nil {
			b.Fatal(err)
		}
	}
}
