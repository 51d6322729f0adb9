package agent

import (
	"github.com/monagent/monagent/timebase"
)

// Route moves timestamps from one clock domain to another the way
// Translators.Move does, for a hot path that moves many (an event source's
// every edge): it keeps the chain of translators Move's search found and a
// copy of each one's model, refreshed only when that model changes (its
// Version) or translators are added, instead of searching and locking for
// every stamp. While every hop of the kept chain has a model it is used; when
// one has none, or the set of translators changed, the chain is searched for
// again, in Move's order. Not safe for concurrent use: each goroutine keeps
// its own.
type Route struct {
	t        *Translators
	from, to timebase.Domain
	gen      uint64 // the translators' generation the chain was found in
	hops     []routeHop
	found    bool
	// Translators on paths Move prefers that had no model when the chain was
	// found: when one of them changes (gains a model), search again.
	waiting []routeWait
}

type routeWait struct {
	tr  *timebase.Translator
	ver uint64
}

type routeHop struct {
	tr       *timebase.Translator
	to       timebase.Domain // the domain this hop lands in
	inverse  bool            // the translator maps to -> from
	ver      uint64
	ok       bool
	fwd, inv timebase.LinearModel
}

// Route returns a route from one domain to another.
func (t *Translators) Route(from, to timebase.Domain) *Route {
	return &Route{t: t, from: from, to: to}
}

// Move moves a timestamp of the route's source domain (ts.Domain must be it)
// to its destination, adding each hop's uncertainty to ts's.
func (r *Route) Move(ts timebase.Timestamp) (timebase.Timestamp, error) {
	if ts.Domain == r.to {
		return ts, nil
	}
	if ts.Domain != r.from {
		return r.t.Move(ts, r.to)
	}
	if !r.found || r.gen != r.t.gen.Load() || r.preferredChanged() {
		if err := r.resolve(); err != nil {
			return timebase.Timestamp{}, err
		}
	}
	if out, ok := r.apply(ts); ok {
		return out, nil
	}
	// A hop lost its model (a reset): search again, as Move would.
	if err := r.resolve(); err != nil {
		return timebase.Timestamp{}, err
	}
	if out, ok := r.apply(ts); ok {
		return out, nil
	}
	return r.t.Move(ts, r.to)
}

// preferredChanged says whether a translator of a path Move prefers to the
// kept one has changed since the chain was found.
func (r *Route) preferredChanged() bool {
	for _, w := range r.waiting {
		if w.tr.Version() != w.ver {
			return true
		}
	}
	return false
}

// apply runs the kept chain, refreshing a hop's model copy when it changed;
// false when a hop has no model.
func (r *Route) apply(ts timebase.Timestamp) (timebase.Timestamp, bool) {
	cur := ts
	for i := range r.hops {
		h := &r.hops[i]
		if v := h.tr.Version(); v != h.ver || !h.ok {
			m, v, err := h.tr.ModelAt()
			h.ver, h.ok = v, err == nil
			if !h.ok {
				return ts, false
			}
			h.fwd = m
			if h.inverse {
				h.inv = m.Invert()
			}
		}
		if h.inverse {
			x := h.inv.Apply(cur.NS)
			cur = timebase.Timestamp{NS: x, Domain: h.to, UncertaintyNS: cur.UncertaintyNS + h.fwd.Uncertainty(x)}
		} else {
			cur = timebase.Timestamp{NS: h.fwd.Apply(cur.NS), Domain: h.to, UncertaintyNS: cur.UncertaintyNS + h.fwd.Uncertainty(cur.NS)}
		}
	}
	return cur, true
}

// resolve searches the chain Move would take now: the first path, in Move's
// order, whose every hop has a translator with a model.
func (r *Route) resolve() error {
	r.gen = r.t.gen.Load()
	r.found = false
	r.waiting = r.waiting[:0]
	const raw, rt = timebase.DomainMonotonicRaw, timebase.DomainRealtime
	paths := [...][3]timebase.Domain{
		{r.to}, {raw, r.to}, {rt, r.to}, {raw, rt, r.to}, {rt, raw, r.to},
	}
	err := errNoTranslation
	for _, path := range paths {
		r.hops = r.hops[:0]
		cur, ok := r.from, true
		for _, d := range path {
			if d == 0 {
				break
			}
			if d == cur || (d != r.to && d == r.from) {
				ok = false
				break
			}
			tr, found := r.t.Lookup(cur, d)
			if !found {
				ok = false
				break
			}
			if _, v, e := tr.ModelAt(); e != nil {
				r.waiting = append(r.waiting, routeWait{tr: tr, ver: v})
				err, ok = e, false
				break
			}
			r.hops = append(r.hops, routeHop{tr: tr, to: d, inverse: tr.From() != cur, ver: ^uint64(0)})
			cur = d
			if d == r.to {
				break
			}
		}
		if ok && cur == r.to {
			r.found = true
			return nil
		}
	}
	r.hops = r.hops[:0]
	return err
}
