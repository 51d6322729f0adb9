package ntp

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

// TestWarmUpPrecedesEachRequest: before every request the probe sends one
// byte to the discard port of its host's loopback (see Prober.warmUp), and
// none with NoWarmUp; the requests are answered all the same.
func TestWarmUpPrecedesEachRequest(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	var conn, discard *sockts.Conn
	if err := cli.Do(func() (err error) {
		if conn, err = sockts.ListenUDP(netip.AddrPortFrom(cli.Addr, 0), sockts.Options{}); err != nil {
			return err
		}
		discard, err = sockts.ListenUDP(netip.MustParseAddrPort("127.0.0.1:9"), sockts.Options{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer discard.Close()
	for _, tc := range []struct {
		noWarmUp bool
		want     int
	}{{false, 3}, {true, 0}} {
		p := NewProber(ProbeConfig{Server: netip.AddrPortFrom(srv.Addr, 123), NoWarmUp: tc.noWarmUp}, conn)
		for i := 0; i < 3; i++ {
			if _, err := p.Poll(context.Background()); err != nil {
				t.Fatalf("NoWarmUp %v, poll %d: %v", tc.noWarmUp, i, err)
			}
		}
		got := 0
		var b [16]byte
		for {
			n, _, _, err := discard.ReadFrom(b[:], 50*time.Millisecond)
			if errors.Is(err, sockts.ErrTimeout) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("a warm-up datagram of %d bytes, want 1", n)
			}
			got++
		}
		if got != tc.want {
			t.Errorf("NoWarmUp %v: %d warm-up datagrams for 3 requests, want %d", tc.noWarmUp, got, tc.want)
		}
	}
}
