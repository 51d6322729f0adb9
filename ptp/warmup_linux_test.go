package ptp

import (
	"context"
	"testing"
	"time"

	"github.com/monagent/monagent/internal/testbed"
)

// TestWarmUpPrecedesEachDelayReq: before every Delay_Req the probe sends
// one byte to the discard port of its host's loopback (see Probe.warm), over
// UDPv4 and IEEE 802.3, and none with NoWarmUp; the Delay_Reqs are answered
// all the same.
func TestWarmUpPrecedesEachDelayReq(t *testing.T) {
	needKernelTimestamps(t)
	master, host := testbed.NewLink(t)
	testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true, Transport: "UDPv4"})
	testbed.StartPtp4l(t, master, testbed.Ptp4lOptions{Master: true, Transport: "L2"})
	discard := testbed.ListenDiscard(t, host)
	for _, tc := range []struct {
		name   string
		listen func(iface string) (*Probe, error)
		warm   bool
	}{
		{"UDPv4", func(iface string) (*Probe, error) { return ListenUDP(UDPConfig{Interface: iface}) }, true},
		{"UDPv4 NoWarmUp", func(iface string) (*Probe, error) { return ListenUDP(UDPConfig{Interface: iface, NoWarmUp: true}) }, false},
		{"L2", func(iface string) (*Probe, error) { return ListenL2(L2Config{Interface: iface}) }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *Probe
			if err := host.Do(func() (err error) {
				p, err = tc.listen(host.If)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			// Until three exchanges were answered: each needs a Delay_Req.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			answered := 0
			var last int64
			p.Run(ctx, func(ex *Exchange) {
				if ex.T4 != last {
					last = ex.T4
					if answered++; answered == 3 {
						cancel()
					}
				}
			})
			if answered < 3 {
				t.Fatalf("%d Delay_Reqs answered in 30 s, want 3", answered)
			}
			sent := p.TxSources[0].Load() + p.TxSources[1].Load() + p.TxSources[2].Load() + p.TxSources[3].Load()
			got, odd := discard.Count(t)
			if odd != 0 {
				t.Errorf("%d warm-up datagrams not of 1 byte", odd)
			}
			want := 0
			if tc.warm {
				want = int(sent)
			}
			if got != want || sent < 3 {
				t.Errorf("%d warm-up datagrams for %d Delay_Reqs sent, want %d", got, sent, want)
			}
		})
	}
}
