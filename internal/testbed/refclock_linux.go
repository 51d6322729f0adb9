package testbed

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// RefclockSock feeds a chronyd `refclock SOCK` the samples of a reference
// that is a fixed offset away from the host's clock: every sample says
// "at system time t the true time was t + Offset". A chronyd -x that selects
// it never touches the host clock, but its null clock driver applies every
// correction to its own (software) time at once: it serves host time +
// Offset, to within its tracking residual (chronyc tracking's System time,
// positive: the host clock is slow of the served time). `makestep` does not
// work under -x ("Could not step system clock"): the first slew does it.
type RefclockSock struct {
	Path   string // the socket chronyd creates; chronyd.conf: ChronydRefclockConf
	Offset time.Duration
	Sent   int // samples sent while chronyd's socket was there (read after Stop)

	stop, done chan struct{}
	once       sync.Once
}

// ChronydRefclockConf makes chronyd an NTP server (stratum 1, answering
// everyone on its link) of the SOCK refclock at path, polled every second,
// its samples taken as exact (precision 1 ns, no delay); nothing else may
// be selected (no `local`), so until the refclock is selected chronyd
// answers as unsynchronised.
func ChronydRefclockConf(path string) string {
	return fmt.Sprintf("refclock SOCK %s refid TRUE poll 0 precision 1e-9 delay 0\nallow all\n", path)
}

// NewRefclockSock makes a short socket path (a Unix socket path has at most
// 107 bytes, which a test's TempDir may pass) for a refclock of offset; its
// directory is removed when the test ends. Start it once chronyd runs.
func NewRefclockSock(t testing.TB, offset time.Duration) *RefclockSock {
	t.Helper()
	dir, err := os.MkdirTemp("", "refclk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return &RefclockSock{Path: filepath.Join(dir, "ref.sock"), Offset: offset}
}

// Start sends a sample every `every` until Stop (or the test's end); call
// it once. It
// sends each sample in both layouts of chrony's struct sock_sample (a
// 64-bit time_t: 40 bytes; a 32-bit one, older 32-bit ARM: 32 bytes):
// chronyd drops, with a debug message only, a datagram whose length is not
// its own struct's, so exactly one is taken.
func (r *RefclockSock) Start(t testing.TB, every time.Duration) {
	t.Helper()
	// An unbound datagram socket: chronyd's socket comes and goes with it.
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	to := &unix.SockaddrUnix{Name: r.Path}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(r.done)
		defer unix.Close(fd)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			now := time.Now()
			ok := true
			for _, b := range [][]byte{SockSample(now, r.Offset, true), SockSample(now, r.Offset, false)} {
				if err := unix.Sendto(fd, b, 0, to); err != nil {
					ok = false // chronyd not up yet, or restarting
				}
			}
			if ok {
				r.Sent++
			}
			select {
			case <-r.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(r.Stop)
}

// Stop stops the samples (nothing when not started).
func (r *RefclockSock) Stop() {
	if r.stop == nil {
		return
	}
	r.once.Do(func() { close(r.stop) })
	<-r.done
}

// sockMagic is SOCK_MAGIC of chrony's refclock_sock.c ("SOCK").
const sockMagic = 0x534f434b

// SockSample encodes chrony's struct sock_sample in native byte order:
//
//	struct timeval tv;  /* system time of the sample */
//	double offset;      /* true time - system time, s */
//	int pulse;          /* 0: not a PPS sample */
//	int leap;           /* 0: no leap second */
//	int _pad;
//	int magic;          /* 0x534f434b */
//
// time64 selects a 64-bit time_t and suseconds_t (16-byte timeval, the
// double then 8-aligned: 40 bytes); otherwise both are 32 bits (32 bytes).
func SockSample(at time.Time, offset time.Duration, time64 bool) []byte {
	ne := binary.NativeEndian
	var b []byte
	sec, usec := at.Unix(), int64(at.Nanosecond()/1000)
	if time64 {
		b = ne.AppendUint64(b, uint64(sec))
		b = ne.AppendUint64(b, uint64(usec))
	} else {
		b = ne.AppendUint32(b, uint32(sec))
		b = ne.AppendUint32(b, uint32(usec))
	}
	b = ne.AppendUint64(b, math.Float64bits(offset.Seconds()))
	for _, v := range []uint32{0, 0, 0, sockMagic} {
		b = ne.AppendUint32(b, v)
	}
	return b
}
