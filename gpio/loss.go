package gpio

// LineLoss is the count of one line's events.
type LineLoss struct {
	Offset   uint32
	Received uint64 // events read
	Lost     uint64 // events the kernel dropped (line_seqno gaps)
}

// LossTracker counts the events the kernel dropped from one request's queue.
// When the queue (kfifo) is full the kernel discards the oldest event, but it
// has numbered every edge: seqno counts the request's edges and line_seqno
// each line's, both from 1. A gap before an event is the number of events lost
// just before it, so for every line Received + Lost = the edges the kernel
// saw, up to the last event read (drops after it show with the next event).
//
// A tracker holds up to MaxLines lines (a request's limit) and does not
// allocate. It is not safe for concurrent use; the zero value is ready.
type LossTracker struct {
	lines    [MaxLines]lineState
	n        int
	seqno    uint32 // last request seqno
	seqSeen  bool
	seqLost  uint64
	received uint64
	// untracked counts events of lines beyond the first MaxLines, and
	// backwards counts line_seqnos that did not move forward (neither
	// happens with a kernel's request).
	untracked, backwards uint64
}

type lineState struct {
	offset   uint32
	last     uint32
	seen     bool
	received uint64
	lost     uint64
	reported uint64 // lost as NewLosses last handed it out
}

// Observe accounts one event, in the order read, and returns how many events
// of its line the kernel lost just before it.
func (t *LossTracker) Observe(e *Event) (lost uint64) {
	t.received++
	if n, ok := gap(e.Seqno, t.seqno, t.seqSeen); ok {
		t.seqLost += n
		t.seqno, t.seqSeen = e.Seqno, true
	}
	l := t.line(e.Offset)
	if l == nil {
		t.untracked++
		return 0
	}
	l.received++
	lost, ok := gap(e.LineSeqno, l.last, l.seen)
	if !ok {
		// A repeated or older number: not from a kernel; count, keep going.
		t.backwards++
	}
	l.last, l.seen = e.LineSeqno, true
	l.lost += lost
	return lost
}

// gap is how many numbers were skipped between last and cur (wrapping at
// 2^32); numbers start at 1, so before the first (seen false) cur-1 were
// skipped. ok is false when cur does not move forward.
func gap(cur, last uint32, seen bool) (uint64, bool) {
	if !seen {
		if cur == 0 {
			return 0, false
		}
		return uint64(cur - 1), true
	}
	d := cur - last
	if d == 0 || d >= 1<<31 {
		return 0, false
	}
	return uint64(d - 1), true
}

func (t *LossTracker) line(offset uint32) *lineState {
	for i := 0; i < t.n; i++ {
		if t.lines[i].offset == offset {
			return &t.lines[i]
		}
	}
	if t.n == len(t.lines) {
		return nil
	}
	t.lines[t.n] = lineState{offset: offset}
	t.n++
	return &t.lines[t.n-1]
}

// Lost is the events lost on all lines (the sum of the line_seqno gaps).
func (t *LossTracker) Lost() uint64 {
	var s uint64
	for i := 0; i < t.n; i++ {
		s += t.lines[i].lost
	}
	return s
}

// Received is the events observed.
func (t *LossTracker) Received() uint64 { return t.received }

// SeqnoLost is the sum of the request's seqno gaps. The kernel numbers a
// request's edges and its lines' edges together, so it equals Lost; a
// difference means events arrived out of order or from another request.
func (t *LossTracker) SeqnoLost() uint64 { return t.seqLost }

// Anomalies counts events the tracker could not account: line_seqnos that
// did not move forward, and events of lines beyond MaxLines.
func (t *LossTracker) Anomalies() uint64 { return t.untracked + t.backwards }

// NewLosses calls f with each line's losses since its previous call, for
// the lines that have new ones.
func (t *LossTracker) NewLosses(f func(offset uint32, lost uint64)) {
	for i := range t.lines[:t.n] {
		if l := &t.lines[i]; l.lost > l.reported {
			f(l.offset, l.lost-l.reported)
			l.reported = l.lost
		}
	}
}

// Lines appends each line's counts to dst, in the order lines first appeared.
func (t *LossTracker) Lines(dst []LineLoss) []LineLoss {
	for i := 0; i < t.n; i++ {
		l := &t.lines[i]
		dst = append(dst, LineLoss{Offset: l.offset, Received: l.received, Lost: l.lost})
	}
	return dst
}
