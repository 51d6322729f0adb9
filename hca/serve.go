package hca

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/monagent/monagent/sockts"
	"github.com/monagent/monagent/timebase"
)

// retiredEpochs is how many of a peer's earlier epochs an Endpoint
// remembers (and refuses) besides its current one.
const retiredEpochs = 16

// peerState is what an Endpoint knows of one peer (wire.go): its current
// epoch (0 until a fresh message names it), the epochs it left, a window
// over the current epoch's requests, one over the answers to this
// endpoint's requests (its own sequence numbers, unique in its epoch), the
// last model round taken from the current epoch, and the epoch of pings
// that did not name this endpoint's (tentative), with their window.
type peerState struct {
	epoch        uint64
	retired      [retiredEpochs]uint64
	nextRetire   int
	requests     replayWindow
	answers      replayWindow
	modelRound   int64
	hasModel     bool
	tentative    uint64
	tentativeWin replayWindow
	probe        bool // a run or model to it went unanswered: ping before the next
}

// isRetired reports whether ep is an epoch the peer left.
func (p *peerState) isRetired(ep uint64) bool {
	for _, r := range p.retired {
		if r == ep && r != 0 {
			return true
		}
	}
	return false
}

// adopt takes ep as the peer's current epoch, retiring the one before; it
// reports whether there was one (the peer restarted).
func (p *peerState) adopt(ep uint64) bool {
	restarted := p.epoch != 0
	if restarted {
		p.retired[p.nextRetire] = p.epoch
		p.nextRetire = (p.nextRetire + 1) % retiredEpochs
	}
	p.epoch = ep
	p.requests.Reset()
	if ep == p.tentative { // its pings answered so far stay answered
		p.requests = p.tentativeWin
	}
	p.tentative = 0
	p.modelRound, p.hasModel = 0, false
	return restarted
}

// Serve reads the socket until ctx ends (it then returns ctx's error) or the
// socket is closed: it answers pings and models, carries out runs (each on
// its own goroutine, at most maxRuns at once, ended with ctx), and hands
// answers to their requests. Only one Serve may run at a time. It closes
// nothing; Close is the owner's.
func (e *Endpoint) Serve(ctx context.Context) error {
	if !e.serving.CompareAndSwap(false, true) {
		return fmt.Errorf("hca endpoint %d: already serving", e.rank)
	}
	defer e.serving.Store(false)
	if err := e.conn.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("hca endpoint %d: %w", e.rank, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = e.conn.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var runs sync.WaitGroup
	defer runs.Wait()

	wc := newCodec(e.key)
	buf := make([]byte, 2048) // more than maxMessageLen, so that long datagrams show
	out := make([]byte, 0, maxMessageLen)
	oob := make([]byte, 256)
	var ctl sockts.Control
	layout := sockts.NativeLayout()
	for {
		n, oobn, _, src, err := e.conn.ReadMsgUDPAddrPort(buf, oob)
		now := e.clock()
		if err == nil && e.rxStamp && layout.Parse(oob[:oobn], &ctl) == nil && ctl.Software != 0 {
			if c, rt, ok := e.pairedRealtime(); ok {
				if wait := rt - ctl.Software; wait >= 0 && wait < int64(time.Second) {
					now = c - wait
					e.c.kernelStamped.Add(1)
				}
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("hca endpoint %d: serve: %w", e.rank, err)
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// A deadline left by an earlier Serve's context: clear it
				// rather than spin on it.
				if err := e.conn.SetReadDeadline(time.Time{}); err != nil {
					return fmt.Errorf("hca endpoint %d: serve: %w", e.rank, err)
				}
				continue
			}
			return fmt.Errorf("hca endpoint %d: serve: read: %w", e.rank, err)
		}
		e.c.received.Add(1)
		if !e.fromPeer(src) {
			e.c.unknownSource.Add(1)
			continue
		}
		m, ok := e.accept(wc, buf[:n])
		if !ok {
			continue
		}
		switch m.Type {
		case msgPong, msgReport, msgModelAck:
			e.deliver(m, now)
		case msgPing:
			if e.delay > 0 {
				e.delayedPong(ctx, &runs, m, now)
				continue
			}
			out = e.pong(wc, m, now, out)
		case msgModel:
			take, ok := e.modelOrder(m)
			if !ok {
				continue
			}
			if take && e.onModel != nil {
				e.onModel(int(m.From), m.Send, m.Model)
			}
			e.c.models.Add(1)
			out = wc.append(out[:0], e.answer(msgModelAck, m))
			e.reply(out, m.From)
		case msgRun:
			e.startRun(ctx, &runs, m)
		}
	}
}

// maxPairNS bounds the REALTIME interval around a reading of the
// endpoint's clock for the two to count as simultaneous.
const maxPairNS = 2_000

// pairedRealtime reads the endpoint's clock between two REALTIME readings
// and returns it with their midpoint, so that a kernel stamp (REALTIME) can
// be carried to the endpoint's clock. A pair whose readings lie more than
// maxPairNS apart (the goroutine was preempted between them) is read again,
// up to three times; ok is false when none was tight.
func (e *Endpoint) pairedRealtime() (clock, rt int64, ok bool) {
	for range 3 {
		r1, err := timebase.Realtime.Now()
		c := e.clock()
		r2, err2 := timebase.Realtime.Now()
		if err != nil || err2 != nil {
			return 0, 0, false
		}
		if r2-r1 <= maxPairNS {
			return c, r1 + (r2-r1)/2, true
		}
	}
	return 0, 0, false
}

// answer is the answer of type t to request m: from this endpoint's
// epoch, echoing m's epoch and sequence number.
func (e *Endpoint) answer(t msgType, m message) message {
	return message{Type: t, Session: m.Session, Epoch: e.epoch, PeerEpoch: m.Epoch, From: e.rank, To: m.From, Seq: m.Seq, Send: m.Send}
}

// modelOrder decides on a model that accept let through: take it (newer
// than the last taken from its sender's epoch), acknowledge it only (that
// round again: a retransmission after a lost model-ack), or refuse it
// (ok false, counted: an older round).
func (e *Endpoint) modelOrder(m message) (take, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.known[m.From] // accept made it, in m's epoch
	switch {
	case !st.hasModel || m.Send > st.modelRound:
		st.modelRound, st.hasModel = m.Send, true
		return true, true
	case m.Send == st.modelRound:
		return false, true
	}
	e.c.staleModel.Add(1)
	return false, false
}

// accept authenticates and checks one datagram: the session, the ranks, the
// epochs and the replay window (wire.go). Whatever fails is counted under
// one drop counter.
func (e *Endpoint) accept(wc *codec, b []byte) (message, bool) {
	m, err := wc.decode(b)
	switch {
	case errors.Is(err, errBadMAC):
		e.c.unauth.Add(1)
		return m, false
	case err != nil:
		e.c.malformed.Add(1)
		return m, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.Session != e.session {
		e.c.foreign.Add(1)
		return m, false
	}
	if _, known := e.peers[m.From]; m.To != e.rank || !known {
		e.c.misaddressed.Add(1)
		return m, false
	}
	st := e.known[m.From]
	if st == nil {
		st = new(peerState)
		e.known[m.From] = st
	}
	fresh := m.PeerEpoch == e.epoch // made after this endpoint started
	switch {
	case m.Type.IsAnswer() && !fresh:
		e.c.unmatch.Add(1) // to a request of an earlier start
		return m, false
	case m.Epoch != st.epoch && st.isRetired(m.Epoch):
		e.c.replayed.Add(1)
		return m, false
	case (m.Type == msgRun || m.Type == msgModel) && !fresh:
		e.c.staleEpoch.Add(1)
		return m, false
	case m.Epoch != st.epoch && fresh:
		if st.adopt(m.Epoch) {
			e.c.restarts.Add(1)
		}
	}
	win := &st.requests
	switch {
	case m.Type.IsAnswer():
		win = &st.answers
	case m.Epoch != st.epoch:
		// A ping from a start of the peer not heard from yet that does
		// not name this one: answered, nothing learnt (wire.go), but not
		// twice.
		if st.tentative != m.Epoch {
			st.tentative = m.Epoch
			st.tentativeWin.Reset()
		}
		win = &st.tentativeWin
	}
	if !win.Accept(m.Seq) {
		e.c.replayed.Add(1)
		return m, false
	}
	if m.Type.IsAnswer() {
		st.probe = false
	}
	return m, true
}

// deliver hands an answer read at now to the request waiting for it.
func (e *Endpoint) deliver(m message, now int64) {
	e.mu.Lock()
	w := e.waiters[m.Seq]
	if w == nil || !w.answers(m) {
		e.mu.Unlock()
		e.c.unmatch.Add(1)
		return
	}
	delete(e.waiters, m.Seq)
	e.mu.Unlock()
	w.recv = now
	e.c.matched.Add(1)
	w.ch <- m // buffered, and only ever sent once: the waiter is gone from the map
}

// pong answers a ping read at now with the midpoint of arrival and
// departure.
func (e *Endpoint) pong(wc *codec, m message, now int64, out []byte) []byte {
	before := e.clock()
	a := e.answer(msgPong, m)
	a.Remote = now + (before-now)/2
	out = wc.append(out[:0], a)
	// Counted before the write, so that the count is up when the pong lands.
	e.c.answered.Add(1)
	e.reply(out, m.From)
	return out
}

// delayedPong answers m after the responder's half of the endpoint's
// AnswerDelay, on a goroutine of its own (with its own codec), so that
// Serve goes on reading meanwhile.
func (e *Endpoint) delayedPong(ctx context.Context, wg *sync.WaitGroup, m message, now int64) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if sleepCtx(ctx, e.delay-e.delay/2) == nil {
			// After an idle spell the answer path runs cold, and only the
			// answer's leg of the exchange would pay for it (the reading is
			// taken before the encoding and the write): one encoding first,
			// thrown away, warms it.
			c := newCodec(e.key)
			out := c.append(make([]byte, 0, maxMessageLen), e.answer(msgPong, m))
			e.pong(c, m, now, out)
		}
	}()
}

// sleepCtx waits d or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reply writes an encoded answer to rank's address from the peer list (not
// the datagram's source, which a forger chooses).
func (e *Endpoint) reply(b []byte, rank uint32) {
	e.mu.Lock()
	addr, ok := e.peers[rank]
	e.mu.Unlock()
	if !ok {
		return
	}
	e.c.sent.Add(1)
	if _, err := e.conn.WriteToUDPAddrPort(b, addr); err != nil {
		e.c.sendErrors.Add(1)
	}
}

// startRun carries out a run on its own goroutine and reports it to the
// requester. A run whose target is not a peer, or that would exceed
// maxRuns, is dropped and counted; its driver times out.
func (e *Endpoint) startRun(ctx context.Context, runs *sync.WaitGroup, m message) {
	e.mu.Lock()
	_, known := e.peers[m.Target]
	addr := e.peers[m.From]
	e.mu.Unlock()
	if !known {
		e.c.misaddressed.Add(1)
		return
	}
	if e.running.Add(1) > maxRuns {
		e.running.Add(-1)
		e.c.busy.Add(1)
		return
	}
	e.c.runs.Add(1)
	runs.Add(1)
	go func() {
		defer runs.Done()
		defer e.running.Add(-1)
		r := e.answer(msgReport, m)
		r.Send, r.Target = 0, m.Target
		x, err := e.pingBurst(ctx, int(m.Target), int(m.Burst))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.Lost = true
		} else {
			r.Send, r.Remote, r.Recv = x.Send, x.Remote, x.Recv
		}
		e.send(r, addr)
	}()
}
