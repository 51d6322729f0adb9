package gpio

import (
	"os"
	"sync"
)

// IRQAccount counts the edges a line request's lines raised as IRQs
// (/proc/interrupts), so that the edges gpiolib-cdev merged before queuing
// them — IRQs that fired before its IRQ thread ran, which show in no seqno —
// are counted too: per line, irqs (the kernel saw) = events + lost (seqno
// gaps) + merged.
//
// merged is judged one check late: the IRQs counted at the previous check
// (an interval ago) must all have been queued, and read, by now; any beyond
// the line's last seqno were merged. While edges stream it is a lower bound
// (the seqno also counts edges of later IRQs), never decreasing; it is exact
// once the line has been quiet for an interval, and when the request
// closes (edges the kernel queued but nobody read by then are lost with it,
// and counted here). It assumes the reader drains the kernel's queue within
// an interval, which it does unless the agent stalls.
type IRQAccount struct {
	path     string // /proc/interrupts
	consumer string
	offsets  []int

	mu          sync.Mutex
	live        bool           // a request is open and its IRQs were found
	base, prev  map[int]uint64 // counts when the request opened, at the last check
	merged      map[int]uint64 // this request's
	queued      map[int]uint64 // this request's events + counted losses (Queued)
	irqsDone    map[int]uint64 // earlier requests'
	mergedDone  map[int]uint64
	found       map[int]bool // lines whose IRQ was ever found
	unavailable string       // why the counts are not there, if they are not
}

// NewIRQAccount accounts the IRQs of consumer's lines offsets in
// /proc/interrupts.
func NewIRQAccount(consumer string, offsets []int) *IRQAccount {
	return newIRQAccount("/proc/interrupts", consumer, offsets)
}

func newIRQAccount(path, consumer string, offsets []int) *IRQAccount {
	return &IRQAccount{path: path, consumer: consumer, offsets: offsets,
		base: map[int]uint64{}, prev: map[int]uint64{}, merged: map[int]uint64{}, queued: map[int]uint64{},
		irqsDone: map[int]uint64{}, mergedDone: map[int]uint64{}, found: map[int]bool{}}
}

func (w *IRQAccount) read() (map[int]uint64, error) {
	b, err := os.ReadFile(w.path)
	if err != nil {
		return nil, err
	}
	irqs, err := ParseInterrupts(b)
	if err != nil {
		return nil, err
	}
	return LineIRQCounts(irqs, w.consumer, w.offsets)
}

// Start takes the counts when a request has opened: its baseline.
func (w *IRQAccount) Start() {
	counts, err := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = err == nil && len(counts) > 0
	switch {
	case err != nil:
		w.unavailable = err.Error()
	case len(counts) == 0:
		w.unavailable = "no IRQ named " + w.consumer + " in " + w.path
	default:
		w.unavailable = ""
	}
	clear(w.base)
	clear(w.prev)
	clear(w.merged)
	clear(w.queued)
	for o, c := range counts {
		w.base[o], w.prev[o] = c, c
		w.found[o] = true
	}
}

// Queued is called by the reader after each read with its loss tracker:
// each line's events + counted losses in the open request (Received + Lost),
// what Check and Stop judge the IRQs against. It does not allocate.
func (w *IRQAccount) Queued(t *LossTracker) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range t.lines[:t.n] {
		l := &t.lines[i]
		w.queued[int(l.offset)] = l.received + l.lost
	}
}

// Stop is called by the reader, which reads no more, before the request
// closes: every IRQ so far has become an event, a counted loss or is
// merged (or sits unread in a queue about to be dropped): this request's
// counts join the earlier ones'.
func (w *IRQAccount) Stop() {
	counts, err := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live {
		return
	}
	for o := range w.base {
		if cur, ok := counts[o]; err == nil && ok && cur >= w.prev[o] {
			w.prev[o] = cur
		}
		if seen, q := w.prev[o]-w.base[o], w.queued[o]; seen > q {
			w.merged[o] = max(w.merged[o], seen-q)
		}
		w.irqsDone[o] += w.prev[o] - w.base[o]
		w.mergedDone[o] += w.merged[o]
	}
	w.live = false
}

// Check reads the counts and updates merged (once an interval).
func (w *IRQAccount) Check() {
	w.mu.Lock()
	live := w.live
	w.mu.Unlock()
	if !live {
		return
	}
	counts, err := w.read()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.live {
		return
	}
	if err != nil {
		w.unavailable = err.Error()
		return
	}
	w.unavailable = ""
	for o, cur := range counts {
		if _, ok := w.base[o]; !ok || cur < w.prev[o] {
			continue
		}
		if seen, q := w.prev[o]-w.base[o], w.queued[o]; seen > q {
			w.merged[o] = max(w.merged[o], seen-q)
		}
		w.prev[o] = cur
	}
}

// Counts are a line's IRQs and the edges merged before queuing, since the
// first request; ok once its IRQ was found.
func (w *IRQAccount) Counts(offset int) (irqs, merged uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.found[offset] {
		return 0, 0, false
	}
	irqs, merged = w.irqsDone[offset], w.mergedDone[offset]
	if w.live {
		irqs += w.prev[offset] - w.base[offset]
		merged += w.merged[offset]
	}
	return irqs, merged, true
}

// Why is the reason the counts are unavailable, or "".
func (w *IRQAccount) Why() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.unavailable
}

// Live says whether a request is open and its IRQs were found.
func (w *IRQAccount) Live() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.live
}
