package sockts

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/monagent/monagent/timebase"
)

func loopback(t testing.TB) *Conn {
	t.Helper()
	c, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// kernelTimestamps skips when the kernel (or qemu-user, which emulates neither
// option) gives no packet timestamps.
func kernelTimestamps(t *testing.T, c *Conn) {
	t.Helper()
	if opt, err := c.Option(); opt == "none" {
		t.Skipf("no kernel packet timestamps here: %v", err)
	}
}

func TestLoopbackKernelTimestamps(t *testing.T) {
	a, b := loopback(t), loopback(t)
	kernelTimestamps(t, a)
	to, _ := b.LocalAddr()
	from, _ := a.LocalAddr()
	buf := make([]byte, 64)
	// The kernel switches receive timestamping on through a deferred static key
	// when the first timestamping socket appears: the first packets may miss it.
	a.WriteTo([]byte("warm"), to)
	b.ReadFrom(buf, time.Second)
	time.Sleep(10 * time.Millisecond)
	for i := 0; i < 20; i++ {
		before, _ := timebase.Realtime.Now()
		tx, err := a.WriteTo([]byte("ping"), to)
		if err != nil {
			t.Fatal(err)
		}
		n, src, rx, err := b.ReadFrom(buf, time.Second)
		after, _ := timebase.Realtime.Now()
		if err != nil || n != 4 || src != from {
			t.Fatalf("read %d from %v: %v", n, src, err)
		}
		if tx.Source != SourceSoftware || rx.Source != SourceSoftware {
			t.Fatalf("timestamp sources tx %v rx %v; loopback gives kernel software timestamps", tx.Source, rx.Source)
		}
		if tx.NS < before || rx.NS < tx.NS || rx.NS > after {
			t.Fatalf("before %d tx %d rx %d after %d: out of order", before, tx.NS, rx.NS, after)
		}
	}
}

func TestReadTimeout(t *testing.T) {
	c := loopback(t)
	start := time.Now()
	_, _, _, err := c.ReadFrom(make([]byte, 8), 30*time.Millisecond)
	if !errors.Is(err, ErrTimeout) || time.Since(start) < 25*time.Millisecond {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

// TestUserTimestampsWithoutKernelSupport: where the kernel gives none, sends
// and receives still work and say their timestamps are user space.
func TestUserTimestampsWithoutKernelSupport(t *testing.T) {
	a, b := loopback(t), loopback(t)
	a.noTSReason, a.option = errors.New("forced"), "none"
	to, _ := b.LocalAddr()
	tx, err := a.WriteTo([]byte("x"), to)
	if err != nil || tx.Source != SourceUser || tx.NS == 0 {
		t.Fatalf("tx %+v %v", tx, err)
	}
}

func TestHardwareOnAnInterfaceWithoutIt(t *testing.T) {
	_, err := ListenUDP(netip.MustParseAddrPort("127.0.0.1:0"), Options{Hardware: true, Interface: "lo"})
	if err == nil || !strings.Contains(err.Error(), "interface lo has no hardware timestamping") {
		t.Fatalf("hardware timestamps on lo: %v", err)
	}
}

func TestSendAndReceiveDoNotAllocate(t *testing.T) {
	a, b := loopback(t), loopback(t)
	to, _ := b.LocalAddr()
	msg, buf := []byte("ping"), make([]byte, 64)
	if n := testing.AllocsPerRun(200, func() {
		if _, err := a.WriteTo(msg, to); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := b.ReadFrom(buf, time.Second); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a timestamped send and receive allocate %v times", n)
	}
}
