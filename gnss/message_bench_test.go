package gnss

import "testing"

// BenchmarkDecode decodes gpsd 3.22's lines of each class (go test
// -bench . -benchmem ./gnss; docs/performance.md).
func BenchmarkDecode(b *testing.B) {
	lines := map[Class][]byte{}
	var d Decoder
	for _, line := range goldenLines(b) {
		var m Message
		if d.Decode(line, &m) == nil && !m.Class.Logged() {
			lines[m.Class] = line // the last of each class: TPV and SKY with every member
		}
	}
	for _, c := range []Class{ClassTPV, ClassSKY, ClassTOFF, ClassPPS} {
		line := lines[c]
		b.Run(c.String(), func(b *testing.B) {
			var m Message
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if err := d.Decode(line, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
