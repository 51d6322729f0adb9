package sockts

import (
	"errors"
	"time"
)

// Options configure a timestamping socket.
type Options struct {
	// Hardware asks the NIC of Interface for timestamps (SIOCSHWTSTAMP, all
	// received packets); software timestamps stay on as a fallback.
	Hardware  bool
	Interface string
	// TxWait is how long a send waits for its transmit timestamp on the error
	// queue (default 10 ms; slow boards need more than 1 ms).
	TxWait time.Duration
	// ReuseAddr lets the socket share its port with others that set it too
	// (SO_REUSEADDR: ptp4l's 319/320); each gets every multicast datagram.
	ReuseAddr bool
	// RxFilters are the hardware receive filters (HWTSTAMP_FILTER_*) that
	// serve, in order of preference; default: every packet, else NTP packets.
	RxFilters []int32
}

// ErrTimeout is returned by ReadFrom when nothing arrived in time.
var ErrTimeout = errors.New("timed out")
