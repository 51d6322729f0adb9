package gpio

import (
	"os"
	"sync"
	"time"
)

// IRQAccount counts the edges a line request's lines raised as IRQs
// (/proc/interrupts), so that the edges gpiolib-cdev merged before queuing
// them — IRQs that fired before its IRQ thread ran, which show in no seqno —
// are counted too: per line, irqs (the kernel saw) = events + lost (seqno
// gaps) + merged.
//
// Each check reads the IRQ counts (a snapshot). An IRQ is counted when it
// fires; its thread queues the event a little later, and the reader reads
// it later still. A snapshot is judged — its IRQs beyond the line's events
// read and counted lost (Queued) are merged — only once the reader has
// shown it has read everything queued since: by a read that emptied the
// kernel's queue (drained) and began at least half an interval (the time
// since the previous check; at least judgeDelay) after the snapshot, or by
// reporting no read at all until the next check, nor for judgeDelay (it
// was blocked on an empty queue). A reader that lags behind, however far,
// delays the judgement and never inflates it, so merged never exceeds the
// edges the kernel merged. While edges
// stream it is a lower bound that never decreases. It is exact once a
// snapshot taken after the reader read the line's last edge is judged (at
// the next check when nothing is read in between), and when the request
// closes (edges the kernel queued but nobody read by then are lost with it,
// and counted here). It assumes the reader, and the IRQ thread that queues
// the edges, never stall for a whole interval while edges wait. Where they
// do (a starved IRQ thread: a board or an emulator under load), edges still
// on their way count as merged until the reader has read them: each check
// caps merged at its IRQs less what was read by then, an upper bound on the
// true count (a merged edge is never read), which is exact once the reader
// has caught up, and at Stop.
type IRQAccount struct {
	path     string // /proc/interrupts
	consumer string
	offsets  []int
	now      func() int64 // monotonic ns

	mu          sync.Mutex
	live        bool           // a request is open and its IRQs were found
	base, cur   map[int]uint64 // counts when the request opened, at the last check
	snap        map[int]uint64 // the counts awaiting judgement (pending)
	pending     bool
	snapAt, due int64          // when snap was read; a drained read begun from due judges it
	lastQ       int64          // when the reader last reported (Queued), or Start
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
	t0 := time.Now()
	return &IRQAccount{path: path, consumer: consumer, offsets: offsets,
		now:  func() int64 { return int64(time.Since(t0)) },
		base: map[int]uint64{}, cur: map[int]uint64{}, snap: map[int]uint64{}, merged: map[int]uint64{}, queued: map[int]uint64{},
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

// Start takes the counts when a request has opened: its baseline. The
// reader's first read begins after it.
func (w *IRQAccount) Start() {
	counts, err := w.read()
	now := w.now()
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
	clear(w.cur)
	clear(w.snap)
	clear(w.merged)
	clear(w.queued)
	w.pending, w.snapAt, w.lastQ = false, now, now
	for o, c := range counts {
		w.base[o], w.cur[o] = c, c
		w.found[o] = true
	}
}

// Queued is called by the reader after each read with its loss tracker:
// each line's events + counted losses in the open request (Received + Lost),
// what Check and Stop judge the IRQs against. drained says the read emptied
// the kernel's queue: it returned fewer events than it asked for. It does
// not allocate.
func (w *IRQAccount) Queued(t *LossTracker, drained bool) {
	now := w.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range t.lines[:t.n] {
		l := &t.lines[i]
		w.queued[int(l.offset)] = l.received + l.lost
	}
	// The read began after the previous report: if that was late enough
	// for the snapshot's IRQs to have been queued, the read took the last
	// of them.
	if drained && w.pending && w.lastQ >= w.due {
		w.judge()
	}
	w.lastQ = now
}

// judge counts snap's IRQs beyond what was queued as merged.
func (w *IRQAccount) judge() {
	for o, c := range w.snap {
		if seen, q := c-w.base[o], w.queued[o]; seen > q {
			w.merged[o] = max(w.merged[o], seen-q)
		}
	}
	w.pending = false
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
		if c, ok := counts[o]; err == nil && ok && c >= w.cur[o] {
			w.cur[o] = c
		}
		w.snap[o] = w.cur[o]
	}
	w.judge()
	w.capMerged() // with judge: exactly IRQs less what was read
	for o := range w.base {
		w.irqsDone[o] += w.cur[o] - w.base[o]
		w.mergedDone[o] += w.merged[o]
	}
	w.live = false
}

// Check reads the counts, judges the previous check's if the reader has
// reported nothing since (and nothing for judgeDelay), and keeps the new
// ones for judgement (once an interval).
func (w *IRQAccount) Check() {
	w.mu.Lock()
	live := w.live
	w.mu.Unlock()
	if !live {
		return
	}
	counts, err := w.read()
	now := w.now()
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
	if w.pending && w.lastQ <= w.snapAt && now-w.lastQ >= int64(judgeDelay) {
		w.judge()
	}
	for o, c := range counts {
		if _, ok := w.base[o]; !ok || c < w.cur[o] {
			continue
		}
		w.cur[o], w.snap[o] = c, c
	}
	w.capMerged()
	w.pending, w.due, w.snapAt = true, now+max((now-w.snapAt)/2, int64(judgeDelay)), now
}

// capMerged lowers each line's merged to its IRQs (cur) less what the
// reader has read and counted lost: no merged edge is ever read, so that is
// at least the edges merged, and exactly them once the reader has read every
// edge queued (at Stop, or on a quiet line). It corrects only a count made
// while an edge was slower on its way than the account allows.
func (w *IRQAccount) capMerged() {
	for o, c := range w.cur {
		if seen, q := c-w.base[o], w.queued[o]; seen >= q {
			w.merged[o] = min(w.merged[o], seen-q)
		}
	}
}

// judgeDelay is the least time the account waits before it judges a
// snapshot: a reader silent for less than that is not taken for one
// blocked on an empty queue (it may be pausing between reads to take them
// in batches, collect.Pacer: up to tens of ms), and a drained read judges
// a snapshot only if it began at least that long after it (an IRQ thread
// runs late under load), however close the checks came (collections
// bunched up behind a busy CPU). Without it both counted edges still on
// their way as merged.
const judgeDelay = 100 * time.Millisecond

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
		irqs += w.cur[offset] - w.base[offset]
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
