package ntp

import "testing"

// BenchmarkNtpdStatusGolden: one Status against the replies captured from
// NTPsec 1.2.2 (read status, system variables, one association in two
// fragments) through a fake socket: the decoding cost of one collection.
func BenchmarkNtpdStatusGolden(b *testing.B) {
	conn := &ctlConn{reply: goldenReplies(readGolden(b))}
	m := fakeNtpd(conn)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Status(b.Context()); err != nil {
			b.Fatal(err)
		}
	}
}
