package hca

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"time"

	"github.com/monagent/monagent/timebase"
)

// waiter is a request waiting for its answer.
type waiter struct {
	req  message      // the request as sent
	ch   chan message // the answer; recv is set before it is sent
	recv int64        // the local clock when the answer was read
}

// answers reports whether a is the answer to w's request: the right type,
// from the rank asked, echoing what the request carried.
func (w *waiter) answers(a message) bool {
	r := w.req
	if a.From != r.To {
		return false
	}
	switch r.Type {
	case msgPing:
		return a.Type == msgPong && a.Send == r.Send
	case msgRun:
		return a.Type == msgReport && a.Target == r.Target
	case msgModel:
		return a.Type == msgModelAck && a.Send == r.Send
	}
	return false
}

// Ping runs one ping-pong with rank to: it sends a ping and waits for the
// matching pong (same session, sequence number, ranks and echoed send stamp)
// up to the Endpoint's timeout, after which the error wraps ErrLost. Serve
// must be running.
func (e *Endpoint) Ping(ctx context.Context, to int) (Exchange, error) {
	a, recv, err := e.request(ctx, message{Type: msgPing, To: uint32(to)}, e.timeout)
	if err != nil {
		return Exchange{}, err
	}
	return Exchange{From: int(e.rank), To: to, Send: a.Send, Remote: a.Remote, Recv: recv}, nil
}

// pingBurst runs up to n back-to-back ping-pongs with rank to and returns
// the one with the shortest round trip: the first of a burst wakes the
// path (scheduler, caches), which delays and skews it; the later ones run
// warm. It fails only when every ping is lost.
func (e *Endpoint) pingBurst(ctx context.Context, to, n int) (Exchange, error) {
	var best Exchange
	var err error
	got := false
	for range max(n, 1) {
		x, perr := e.Ping(ctx, to)
		if perr != nil {
			err = perr
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !got || x.rtt() < best.rtt() {
			best, got = x, true
		}
	}
	if !got {
		return Exchange{}, err
	}
	return best, nil
}

// run asks rank from to run a burst of ping-pongs with rank to (pingBurst)
// and report the best: how a driver makes two other nodes exchange. The
// Exchange's stamps are from's and to's clocks. A burst that from reports
// lost, and a report that does not come within burst+2 ping timeouts, are
// errors wrapping ErrLost. from must be a peer; to must be one of from's.
// A run names from's epoch: when it is not known (or from's last run or
// model went unanswered), from is pinged first to learn it.
func (e *Endpoint) run(ctx context.Context, from, to, burst int) (Exchange, error) {
	if to < 0 || to > math.MaxInt32 || burst < 0 || burst > maxBurst {
		return Exchange{}, fmt.Errorf("hca endpoint %d: run %d->%d burst %d: rank or burst out of range", e.rank, from, to, burst)
	}
	wait := time.Duration(max(burst, 1)+2) * e.timeout
	a, _, err := e.request(ctx, message{Type: msgRun, To: uint32(from), Target: uint32(to), Burst: uint32(burst)}, wait)
	if err != nil {
		return Exchange{}, err
	}
	if a.Lost {
		e.c.lost.Add(1)
		return Exchange{}, fmt.Errorf("hca endpoint %d: run %d->%d: rank %d got no answer: %w", e.rank, from, to, from, ErrLost)
	}
	return Exchange{From: from, To: to, Send: a.Send, Remote: a.Remote, Recv: a.Recv}, nil
}

// SendModel gives rank to its clock model m of sync round round and waits
// for the acknowledgement up to the ping timeout (an error wrapping ErrLost
// after that; callers retry). Like a run, it learns to's epoch with a ping
// first when it has to. Rounds must grow within this endpoint's epoch: the
// receiver refuses an older one and takes the same one again only once.
func (e *Endpoint) SendModel(ctx context.Context, to int, round int64, m timebase.LinearModel) error {
	if err := checkModel(m, int64(m.N)); err != nil {
		return fmt.Errorf("hca endpoint %d: model for rank %d: %v", e.rank, to, err)
	}
	_, _, err := e.request(ctx, message{Type: msgModel, To: uint32(to), Send: round, Model: m}, e.timeout)
	return err
}

// request sends req (its type, To and type-specific fields set) with a new
// sequence number in this endpoint's epoch, naming the receiver's epoch as
// far as it is known, and waits up to timeout for its
// answer, returned with the local clock when it was read. A ping's send
// stamp is taken here, just before it is encoded.
func (e *Endpoint) request(ctx context.Context, req message, timeout time.Duration) (message, int64, error) {
	to := req.To
	if to > math.MaxInt32 {
		return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: out of range", e.rank, req.Type, to)
	}
	if req.Type != msgPing && e.mustProbe(to) {
		// A run or a model must name the receiver's epoch: a ping's
		// answer tells it (after this endpoint's start, or the peer's).
		if _, _, err := e.request(ctx, message{Type: msgPing, To: to}, e.timeout); err != nil {
			return message{}, 0, err
		}
	}
	e.mu.Lock()
	addr, ok := e.peers[to]
	req.Session = e.session
	if st := e.known[to]; st != nil {
		req.PeerEpoch = st.epoch
	}
	e.mu.Unlock()
	if !ok {
		return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: not a peer", e.rank, req.Type, to)
	}
	req.From, req.Epoch = e.rank, e.epoch
	req.Seq = e.seq.Add(1)
	w := &waiter{ch: make(chan message, 1)}
	if req.Type == msgPing && e.delay > 0 {
		if err := sleepCtx(ctx, e.delay/2); err != nil {
			return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d: %w", e.rank, req.Type, to, err)
		}
	}

	e.sendMu.Lock()
	if req.Type == msgPing {
		req.Send = e.clock()
	}
	w.req = req
	e.mu.Lock()
	e.waiters[req.Seq] = w
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(e.waiters, req.Seq)
		e.mu.Unlock()
	}()
	err := e.sendLocked(req, addr)
	e.sendMu.Unlock()
	if err != nil {
		return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d at %s: %w", e.rank, req.Type, to, addr, err)
	}

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case a := <-w.ch:
		return a, w.recv, nil
	case <-t.C:
		e.c.lost.Add(1)
		if req.Type != msgPing {
			e.setProbe(to) // the receiver may have restarted
		}
		return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d seq %d: no answer in %v: %w", e.rank, req.Type, to, req.Seq, timeout, ErrLost)
	case <-ctx.Done():
		return message{}, 0, fmt.Errorf("hca endpoint %d: %v to rank %d seq %d: %w", e.rank, req.Type, to, req.Seq, ctx.Err())
	}
}

// mustProbe reports whether a run or model to rank to needs a ping first:
// its epoch is not known, or a run or model went unanswered since the last
// answer from it.
func (e *Endpoint) mustProbe(to uint32) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	st := e.known[to]
	return st == nil || st.epoch == 0 || st.probe
}

func (e *Endpoint) setProbe(to uint32) {
	e.mu.Lock()
	if st := e.known[to]; st != nil {
		st.probe = true
	}
	e.mu.Unlock()
}

// send encodes m and writes it to addr (a failure is counted).
func (e *Endpoint) send(m message, addr netip.AddrPort) {
	e.sendMu.Lock()
	_ = e.sendLocked(m, addr)
	e.sendMu.Unlock()
}

// sendLocked encodes m into the shared transmit buffer and writes it to
// addr, counting the message and a failed write. sendMu must be held.
func (e *Endpoint) sendLocked(m message, addr netip.AddrPort) error {
	e.txBuf = e.txCodec.append(e.txBuf[:0], m)
	e.c.sent.Add(1)
	_, err := e.conn.WriteToUDPAddrPort(e.txBuf, addr)
	if err != nil {
		e.c.sendErrors.Add(1)
	}
	return err
}
