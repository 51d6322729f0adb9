package timebase

import (
	"errors"
	"testing"
)

// routeModels: monotonic_raw -> monotonic, monotonic_raw -> REALTIME and
// REALTIME -> PHC 0, each with a slope and scatter so that every term of the
// uncertainty counts.
func routeModels() *Translators {
	tr := NewTranslators()
	add := func(from, to Domain, off int64, ppb int64) {
		t := tr.Get(from, to, 8)
		for i, x := range []int64{1e9, 2e9, 3e9, 4e9} {
			t.Add(Sample{Local: x, Ref: x + off + x/1e9*ppb + int64(i%2)*7, DelayNS: 40})
		}
	}
	add(DomainMonotonicRaw, DomainMonotonic, 1000, 120)
	add(DomainMonotonicRaw, DomainRealtime, 1795e15, -35)
	add(DomainRealtime, PHC(0), 37e9, 12)
	return tr
}

func TestRouteMovesAsMoveDoes(t *testing.T) {
	tr := routeModels()
	doms := []Domain{DomainMonotonic, DomainMonotonicRaw, DomainRealtime, PHC(0), PHC(1)}
	// The routes are kept across the stages, as a source keeps its own.
	routes := map[[2]Domain]*Route{}
	for _, from := range doms {
		for _, to := range doms {
			routes[[2]Domain{from, to}] = tr.Route(from, to)
		}
	}
	check := func(stage string) {
		t.Helper()
		for _, from := range doms {
			for _, to := range doms {
				r := routes[[2]Domain{from, to}]
				for _, ns := range []int64{0, 2.5e9, 1795e15 + 3e9, 123456789012} {
					ts := Timestamp{NS: ns, Domain: from, UncertaintyNS: 3}
					want, werr := tr.Move(ts, to)
					for range 2 { // the second through the kept chain
						got, gerr := r.Move(ts)
						if got != want || (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
							t.Fatalf("%s: %v -> %v at %d: route %+v, %v; Move %+v, %v", stage, from, to, ns, got, gerr, want, werr)
						}
					}
				}
			}
		}
	}
	check("steady")
	// A model changes: the routes see the new one.
	tr.Get(DomainMonotonicRaw, DomainRealtime, 8).Add(Sample{Local: 5e9, Ref: 5e9 + 1795e15 + 900, DelayNS: 40})
	check("refit")
	// A model is reset (a clock step): routes through it go another way or
	// fail, as Move does...
	tr.ResetDomain(PHC(0))
	check("reset")
	// ...and come back to it once it has a model again.
	tr.Get(DomainRealtime, PHC(0), 8).Add(Sample{Local: 1795e15 + 1e9, Ref: 1795e15 + 38e9, DelayNS: 30})
	check("model back")
	// A preferred path's translator that had no model gains one: the kept
	// routes leave their longer chain for it, as Move does.
	d := tr.Get(DomainMonotonic, DomainRealtime, 8)
	check("direct, no model yet")
	d.Add(Sample{Local: 1e9, Ref: 1e9 + 1795e15 - 1000, DelayNS: 10})
	d.Add(Sample{Local: 2e9, Ref: 2e9 + 1795e15 - 1000, DelayNS: 10})
	check("direct")
	// The clock source's case: REALTIME steps, both its models reset, one
	// comes back first.
	tr.ResetDomain(DomainRealtime)
	check("realtime reset")
	tr.Get(DomainMonotonicRaw, DomainRealtime, 8).Add(Sample{Local: 6e9, Ref: 6e9 + 1795e15 + 2000, DelayNS: 40})
	check("raw model back")
	tr.Get(DomainRealtime, PHC(0), 8).Add(Sample{Local: 1795e15 + 7e9, Ref: 1795e15 + 44e9, DelayNS: 30})
	check("phc model back")
}

func TestRouteWithoutModelSaysSo(t *testing.T) {
	tr := NewTranslators()
	r := tr.Route(DomainMonotonic, DomainRealtime)
	if _, err := r.Move(Timestamp{NS: 1, Domain: DomainMonotonic}); !errors.Is(err, ErrNoTranslation) {
		t.Fatalf("no models: %v", err)
	}
	tr.Get(DomainMonotonic, DomainRealtime, 4) // no samples yet
	if _, err := r.Move(Timestamp{NS: 1, Domain: DomainMonotonic}); !errors.Is(err, ErrNoModel) {
		t.Fatalf("a translator without samples: %v", err)
	}
}

func TestRouteMoveDoesNotAllocate(t *testing.T) {
	tr := routeModels()
	r := tr.Route(DomainMonotonic, PHC(0))
	ts := Timestamp{NS: 2.5e9, Domain: DomainMonotonic}
	if a := testing.AllocsPerRun(1000, func() { r.Move(ts) }); a != 0 {
		t.Fatalf("%.1f allocations per move", a)
	}
}

// BenchmarkMove: MONOTONIC -> REALTIME (two models, one inverted) by search
// and by a kept route.
func BenchmarkMove(b *testing.B) {
	tr := routeModels()
	ts := Timestamp{NS: 2.5e9, Domain: DomainMonotonic}
	b.Run("Translators.Move", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := tr.Move(ts, DomainRealtime); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Route.Move", func(b *testing.B) {
		r := tr.Route(DomainMonotonic, DomainRealtime)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Move(ts); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A one-shot Move is a route used once, on the stack: no allocation once the
// models exist.
func TestMoveDoesNotAllocate(t *testing.T) {
	tr := routeModels()
	ts := Timestamp{NS: 2e9, Domain: DomainMonotonic}
	if _, err := tr.Move(ts, PHC(0)); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(200, func() { tr.Move(ts, PHC(0)) }); a != 0 {
		t.Fatalf("Move allocates %v times", a)
	}
}
