package marker

import (
	"errors"
	"os"
)

// Listener is the agent's end of the marker socket: a Unix datagram socket
// bound at a path with a file mode, whose datagrams the kernel stamps on
// arrival (SO_TIMESTAMPNS) where it can.
type Listener struct {
	path   string
	file   os.FileInfo // the socket file as bound, to remove only ours
	stamps string      // the kernel-stamp option in use, "" for none
	sock   listenSocket
}

// ErrInUse is a socket path another process serves.
var ErrInUse = errors.New("another process is listening on it")

// ErrTooLong is a datagram longer than a line may be (the kernel cut it).
var ErrTooLong = errors.New("longer than MaxLen bytes")

// Path is the socket's path.
func (l *Listener) Path() string { return l.path }

// Stamps names the kernel-stamp option in use (SO_TIMESTAMPNS_NEW,
// SO_TIMESTAMPNS), "" when the reader stamps on receipt.
func (l *Listener) Stamps() string { return l.stamps }

// MaxPathLen is the longest socket path Listen takes: sun_path holds 107
// bytes and a NUL, and the socket is bound under a temporary name 16 bytes
// longer.
const MaxPathLen = 107 - 16

// MaxSkewNS bounds how far a kernel stamp may be from the read that brought
// it; a stamp further off (a mangled control message) is replaced by the
// read's time.
const MaxSkewNS = int64(60e9)
