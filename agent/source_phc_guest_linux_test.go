package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/monagent/monagent/phc"
	"github.com/monagent/monagent/timebase"
)

// TestPHCSourceOnAFrozenPHC runs in the kernel-in-the-loop rig's guests,
// whose e1000e PHC QEMU never advances: the phc source records its readings
// but says the clock is not advancing, counts them, and keeps no model of it
// (a model would put every stamp translated through it at one instant).
func TestPHCSourceOnAFrozenPHC(t *testing.T) {
	iface := os.Getenv("MONAGENT_GUEST_PHC_IFACE")
	if iface == "" {
		t.Skip("no NIC whose PHC is known to be stopped (the rig's guests set MONAGENT_GUEST_PHC_IFACE)")
	}
	c := Default()
	c.PHC.Interfaces = []string{iface}
	tr := NewTranslators()
	srcs, err := buildPHCSources(&Env{Config: &c, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Translators: tr})
	if err != nil || len(srcs) != 1 {
		t.Fatalf("%d sources, %v", len(srcs), err)
	}
	s := srcs[0].(*phcSource)
	defer s.Close()
	var errs []error
	records := 0
	for i := range 3 {
		if i > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		b := &Batch{host: "h"}
		errs = append(errs, s.Collect(context.Background(), b))
		records += len(b.Records)
	}
	if errs[0] != nil || !errors.Is(errs[1], phc.ErrNotAdvancing) || !errors.Is(errs[2], phc.ErrNotAdvancing) {
		t.Fatalf("collections: %v; want the first fine, the next two naming a PHC not advancing", errs)
	}
	t.Logf("%v", errs[2])
	want := uint64(2 * len(c.PHC.Against))
	var got uint64
	for _, f := range s.SelfFields() {
		if f.Key == "not_advancing" {
			got = f.U
		}
	}
	if got != want || records != 3*len(c.PHC.Against) {
		t.Errorf("not_advancing %d, want %d; %d phc_offset records, want %d", got, want, records, 3*len(c.PHC.Against))
	}
	for _, a := range c.PHC.Against {
		sys, _ := timebase.ParseDomain(a)
		if _, err := tr.Move(timebase.Timestamp{NS: 1e9, Domain: s.domain}, sys); err == nil {
			t.Errorf("a model moves stamps of the stopped PHC to %s", sys)
		}
	}
}
