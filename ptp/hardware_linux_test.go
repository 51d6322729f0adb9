package ptp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/monagent/monagent/internal/testbed"
	"github.com/monagent/monagent/sockts"
)

func TestStampTranslatesHardwareOnly(t *testing.T) {
	p := &Probe{Translate: func(ns int64) (int64, error) {
		if ns < 0 {
			return 0, errors.New("before the model")
		}
		return ns + 37_000_000_000, nil // a PHC on TAI
	}}
	for _, tc := range []struct {
		ts   sockts.Timestamp
		want int64
		ok   bool
	}{
		{sockts.Timestamp{NS: 5, Source: sockts.SourceSoftware}, 5, true},
		{sockts.Timestamp{NS: 6, Source: sockts.SourceUser}, 6, true},
		{sockts.Timestamp{NS: 7, Source: sockts.SourceHardware}, 37_000_000_007, true},
		{sockts.Timestamp{NS: -1, Source: sockts.SourceHardware}, 0, false},
	} {
		if got, ok := p.stamp(tc.ts); got != tc.want || ok != tc.ok {
			t.Errorf("stamp(%+v) = %d, %v; want %d, %v", tc.ts, got, ok, tc.want, tc.ok)
		}
	}
	if n := p.Untranslated.Load(); n != 1 {
		t.Errorf("untranslated %d, want 1", n)
	}
	p.Translate = nil
	if _, ok := p.stamp(sockts.Timestamp{NS: 7, Source: sockts.SourceHardware}); ok || p.Untranslated.Load() != 2 {
		t.Errorf("a hardware timestamp without a translator was used (untranslated %d)", p.Untranslated.Load())
	}
}

func TestRunWithHardwareNeedsTranslate(t *testing.T) {
	p := &Probe{Slave: &Slave{}, hardware: true}
	if err := p.Run(context.Background(), func(*Exchange) {}); err == nil || !strings.Contains(err.Error(), "Translate") {
		t.Fatalf("Run without a translator: %v", err)
	}
}

// TestHardwareOnVethIsRefused: a veth has software timestamps only; asking
// for hardware ones is one clear error naming the interface, per transport.
func TestHardwareOnVethIsRefused(t *testing.T) {
	needKernelTimestamps(t)
	_, host := testbed.NewLink(t)
	for name, listen := range map[string]func() (*Probe, error){
		"udp": func() (*Probe, error) { return ListenUDP(UDPConfig{Interface: host.If, Hardware: true}) },
		"l2":  func() (*Probe, error) { return ListenL2(L2Config{Interface: host.If, Hardware: true}) },
	} {
		err := host.Do(func() error {
			p, err := listen()
			if err == nil {
				p.Close()
			}
			return err
		})
		if err == nil || !strings.Contains(err.Error(), "interface "+host.If+" has no hardware timestamping") {
			t.Errorf("%s: hardware timestamps on a veth: %v", name, err)
		}
	}
}
