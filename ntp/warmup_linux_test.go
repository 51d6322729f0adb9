package ntp

import (
	"context"
	"net/netip"
	"testing"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

// TestWarmUpPrecedesEachRequest: before every request the probe sends one
// byte to the discard port of its host's loopback (see Prober.warmUp), and
// none with NoWarmUp; the requests are answered all the same.
func TestWarmUpPrecedesEachRequest(t *testing.T) {
	srv, cli := testbed.NewLink(t)
	testbed.StartChronyd(t, srv, testbed.ChronydServerConf)
	var conn *sockts.Conn
	if err := cli.Do(func() (err error) {
		conn, err = sockts.ListenUDP(netip.AddrPortFrom(cli.Addr, 0), sockts.Options{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	discard := testbed.ListenDiscard(t, cli)
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
		got, odd := discard.Count(t)
		if odd != 0 {
			t.Errorf("%d warm-up datagrams not of 1 byte", odd)
		}
		if got != tc.want {
			t.Errorf("NoWarmUp %v: %d warm-up datagrams for 3 requests, want %d", tc.noWarmUp, got, tc.want)
		}
	}
}
