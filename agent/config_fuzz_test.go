package agent

import (
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the configuration decoder: it never
// panics, and every error names the file (file:line: key: reason).
func FuzzParse(f *testing.F) {
	// Small seeds: the engine minimizes every new input, and a whole board
	// configuration takes it longer than a short fuzz run lasts.
	f.Add([]byte("host: b1\nclock:\n  interval: 1s\n  clocks: [realtime, tai]\n"))
	f.Add([]byte("ntp:\n  enabled: true\n  servers:\n    - address: 10.0.0.1\n      burst: 2\n"))
	f.Add([]byte("sensors:\n  buffers:\n    - device: iio:device0\n      channels: [voltage0]\n"))
	f.Add([]byte("influx: {enabled: true, url: http://h:8086, bucket: db/rp}\nspool: {dir: /x}\n"))
	f.Add([]byte("ntp:\n  servers:\n    - address: [\n"))
	f.Add([]byte("clock: {interval: -1s}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := Parse("fuzz.yaml", data)
		if err != nil && !strings.Contains(err.Error(), "fuzz.yaml") {
			t.Fatalf("error without the file's name: %v", err)
		}
	})
}
