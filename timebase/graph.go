package timebase

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Translators is the graph of clock models the sources keep, one Translator
// per pair of domains, through which timestamps move between domains: the
// clock source keeps each system clock against MONOTONIC_RAW, a PHC source
// each PHC against its system clocks, and every event source moves its
// kernel stamps to REALTIME along a Route. Safe for concurrent use.
type Translators struct {
	mu  sync.RWMutex
	m   map[[2]Domain]*Translator
	gen atomic.Uint64 // bumped when a translator is added (routes search again)
}

// NewTranslators returns an empty graph.
func NewTranslators() *Translators {
	return &Translators{m: map[[2]Domain]*Translator{}}
}

// Get returns the translator from -> to, creating it with window samples.
func (t *Translators) Get(from, to Domain, window int) *Translator {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := [2]Domain{from, to}
	tr := t.m[k]
	if tr == nil {
		tr = NewTranslator(from, to, window)
		t.m[k] = tr
		t.gen.Add(1)
	}
	return tr
}

// Lookup returns the translator between two domains in either direction.
func (t *Translators) Lookup(a, b Domain) (*Translator, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if tr := t.m[[2]Domain{a, b}]; tr != nil {
		return tr, true
	}
	tr := t.m[[2]Domain{b, a}]
	return tr, tr != nil
}

// ResetDomain forgets every model involving d (after a step of that clock).
func (t *Translators) ResetDomain(d Domain) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k, tr := range t.m {
		if k[0] == d || k[1] == d {
			tr.Reset()
		}
	}
}

// ToRealtime returns a function that moves a time of dom (a PHC) to REALTIME
// with the model kept of it, looked up at each call: the source that keeps
// it may start after the caller.
func (t *Translators) ToRealtime(dom Domain) func(int64) (int64, error) {
	return func(ns int64) (int64, error) {
		ts, err := t.Realtime(Timestamp{NS: ns, Domain: dom})
		if err != nil {
			return 0, fmt.Errorf("%s to realtime: %w (enable the phc source for this PHC)", dom, err)
		}
		return ts.NS, nil
	}
}

// ErrNoTranslation is a move between two domains no kept model connects.
var ErrNoTranslation = errors.New("no clock model connects the domains (yet)")

// Move moves ts to domain to: a route used once (see Route for the paths).
// It does not allocate when the models exist.
func (t *Translators) Move(ts Timestamp, to Domain) (Timestamp, error) {
	if ts.Domain == to {
		return ts, nil
	}
	var r Route
	r.t, r.from, r.to = t, ts.Domain, to
	return r.Move(ts)
}

// Realtime moves a timestamp of any system-clock domain (or of a PHC with a
// kept model) to REALTIME, through MONOTONIC_RAW where no direct model
// exists, with its uncertainty.
func (t *Translators) Realtime(ts Timestamp) (Timestamp, error) {
	return t.Move(ts, DomainRealtime)
}

// Route moves timestamps from one domain to another along the first path,
// in this order, whose every hop has a translator with a model: directly;
// through MONOTONIC_RAW (the clock source's reference); through REALTIME (a
// PHC source's usual system clock); through MONOTONIC_RAW then REALTIME;
// through REALTIME then MONOTONIC_RAW. The result's uncertainty adds every
// hop's model's to the timestamp's.
//
// A route keeps the chain it found and a copy of each hop's model, refreshed
// only when that model changes (its Version) or translators are added, so
// that a hot path (an event source's every edge) neither searches nor locks
// per stamp; when a hop has lost its model, or a translator on a path it
// prefers gained one, it searches again. Not safe for concurrent use: each
// goroutine keeps its own.
type Route struct {
	t        *Translators
	from, to Domain
	gen      uint64 // the translators' generation the chain was found in
	found    bool
	hops     [maxHops]routeHop
	n        int // hops in use
	// Translators on paths the route prefers that had no model when the
	// chain was found: when one of them changes (gains a model), search
	// again.
	waiting [len(routePaths)]routeWait
	nwait   int
}

// routePaths are the intermediate domains of each path, in the order tried;
// the destination ends every path.
var routePaths = [...][maxHops - 1]Domain{
	{}, {DomainMonotonicRaw}, {DomainRealtime}, {DomainMonotonicRaw, DomainRealtime}, {DomainRealtime, DomainMonotonicRaw},
}

// maxHops is the longest path's hops.
const maxHops = 3

type routeWait struct {
	tr  *Translator
	ver uint64
}

type routeHop struct {
	tr       *Translator
	to       Domain // the domain this hop lands in
	inverse  bool   // the translator maps to -> from
	ver      uint64
	ok       bool
	fwd, inv LinearModel
}

// Route returns a route from one domain to another.
func (t *Translators) Route(from, to Domain) *Route {
	return &Route{t: t, from: from, to: to}
}

// Move moves a timestamp to the route's destination. A timestamp of another
// domain than the route's source is moved by a route of its own, used once.
func (r *Route) Move(ts Timestamp) (Timestamp, error) {
	if ts.Domain == r.to {
		return ts, nil
	}
	if ts.Domain != r.from {
		return r.t.Move(ts, r.to)
	}
	if !r.found || r.gen != r.t.gen.Load() || r.preferredChanged() {
		if err := r.resolve(); err != nil {
			return Timestamp{}, err
		}
	}
	if out, ok := r.apply(ts); ok {
		return out, nil
	}
	// A hop lost its model (a reset): search again.
	if err := r.resolve(); err != nil {
		return Timestamp{}, err
	}
	if out, ok := r.apply(ts); ok {
		return out, nil
	}
	return Timestamp{}, ErrNoTranslation
}

// preferredChanged says whether a translator of a path preferred to the
// kept one has changed since the chain was found.
func (r *Route) preferredChanged() bool {
	for _, w := range r.waiting[:r.nwait] {
		if w.tr.Version() != w.ver {
			return true
		}
	}
	return false
}

// apply runs the kept chain, refreshing a hop's model copy when it changed;
// false when a hop has no model.
func (r *Route) apply(ts Timestamp) (Timestamp, bool) {
	cur := ts
	for i := range r.hops[:r.n] {
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
			cur = Timestamp{NS: x, Domain: h.to, UncertaintyNS: cur.UncertaintyNS + h.fwd.Uncertainty(x)}
		} else {
			cur = Timestamp{NS: h.fwd.Apply(cur.NS), Domain: h.to, UncertaintyNS: cur.UncertaintyNS + h.fwd.Uncertainty(cur.NS)}
		}
	}
	return cur, true
}

// resolve searches the first path, in routePaths' order, whose every hop has
// a translator with a model. The one path search: Move is a route used once.
func (r *Route) resolve() error {
	r.gen = r.t.gen.Load()
	r.found, r.nwait = false, 0
	err := ErrNoTranslation
	for _, via := range routePaths {
		r.n = 0
		cur, ok := r.from, true
		for i := 0; i < maxHops && ok; i++ {
			d := r.to
			if i < len(via) && via[i] != 0 {
				d = via[i]
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
				r.waiting[r.nwait] = routeWait{tr: tr, ver: v}
				r.nwait++
				err, ok = e, false
				break
			}
			r.hops[r.n] = routeHop{tr: tr, to: d, inverse: tr.From() != cur, ver: ^uint64(0)}
			r.n++
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
	r.n = 0
	return err
}
