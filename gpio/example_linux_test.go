package gpio_test

import (
	"context"
	"fmt"
	"os"

	"github.com/monagent/monagent/gpio"
)

// An event source's producer drains a line in batches: a fixture line (a
// pipe fed with the kernel's encoding) stands in for chip.RequestLines(...)
// and req.Reader(64). The kernel dropped edges 3 and 4 of line 17.
func ExampleReader() {
	r, w, err := os.Pipe()
	if err != nil {
		panic(err)
	}
	defer r.Close()
	defer w.Close()
	var b []byte
	for i, s := range []uint32{1, 2, 5} {
		b = gpio.AppendEvent(b, gpio.Event{TimestampNS: int64(1000 * (i + 1)), Offset: 17,
			Seqno: s, LineSeqno: s, Edge: gpio.Edge(1 + i%2)})
	}
	w.Write(b)

	rd, err := gpio.NewFileReader(r, "fixture", gpio.ClockMonotonic, 64)
	if err != nil {
		panic(err)
	}
	events := make([]gpio.Event, 64)
	n, lost, err := rd.Read(context.Background(), events)
	// A producer would now q.Put(events[:n]) and q.Lost(lost).
	fmt.Println(n, "events,", lost, "lost,", err)
	for _, e := range events[:n] {
		fmt.Println(e.Offset, e.Edge, e.TimestampNS, e.Domain(), e.LineSeqno)
	}
	// Output:
	// 3 events, 2 lost, <nil>
	// 17 rising 1000 monotonic 1
	// 17 falling 2000 monotonic 2
	// 17 rising 3000 monotonic 5
}
