package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// hcaSource runs this agent's part of the clock synchronisation between
// agents (HCAConfig). Every rank serves its endpoint: it answers pings,
// carries out the exchanges rank 0 asks of it, and takes its model from
// rank 0. Rank 0 drives: it waits until every rank answers, runs the
// algorithm, gives each rank its model, ships every model (hca_model) and
// the round's figures (hca_sync), and syncs again after hca.resync, or
// sooner when a model's predicted bound would pass hca.max_bound. A failed
// round is logged, counted and retried after hca.retry_after; every rank
// keeps its last model meanwhile, its bound growing with time.
type hcaSource struct {
	cfg    HCAConfig
	log    *slog.Logger
	ep     *hca.Endpoint
	global *GlobalClock
	alg    hca.Algorithm
	params hca.Params
	n      int
	tags   []record.Tag // rank and algorithm

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	pending []pendingRecord

	rounds, failures, modelsSent, modelsUndelivered atomic.Uint64
	modelsTaken, modelsRefused, boundExceeded       atomic.Uint64
	lastErr                                         atomic.Pointer[string]
}

// pendingRecord is a record made on a goroutine of the source, shipped by
// the next Collect.
type pendingRecord struct {
	measurement string
	t           int64
	tags        []record.Tag
	fields      []record.Field
}

func buildHCASource(env *Env) ([]Source, error) {
	c := env.Config.HCA
	addrs, err := c.peerAddrs()
	if err != nil {
		return nil, keyErr("hca.peers", "%v", err)
	}
	key, err := hca.LoadKey(c.KeyFile)
	if err != nil {
		return nil, &KeyError{Key: "hca.key_file", Reason: err.Error(), Err: err}
	}
	alg, err := hca.AlgorithmByName(c.Algorithm)
	if err != nil {
		return nil, keyErr("hca.algorithm", "%v", err)
	}
	log := env.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	g := env.Global
	if g == nil {
		g = NewGlobalClock(c)
	}
	s := &hcaSource{cfg: c, log: log.With("source", "hca", "rank", c.Rank), global: g, alg: alg, params: c.params(), n: len(addrs),
		tags: []record.Tag{{Key: "algorithm", Value: alg.Name()}, {Key: "rank", Value: strconv.Itoa(c.Rank)}}}
	listen := c.Listen
	if listen == "" {
		listen = addrs[c.Rank].String()
	}
	peers := map[int]netip.AddrPort{}
	for r, a := range addrs {
		if r != c.Rank {
			peers[r] = a
		}
	}
	s.ep, err = hca.Listen(hca.EndpointConfig{Addr: listen, Rank: c.Rank, Key: key, Peers: peers, Session: c.session(addrs),
		Clock: g.Now, Timeout: c.Timeout, OnModel: s.onModel})
	clear(key)
	if err != nil {
		return nil, keyErr("hca.listen", "%v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := s.ep.Serve(ctx); err != nil && ctx.Err() == nil {
			s.fail("serve", err)
		}
	}()
	if c.Rank == 0 {
		g.Set(timebase.Identity, 0) // rank 0's clock is the global timeline
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.drive(ctx)
		}()
	}
	s.log.Info("hca endpoint", "listen", s.ep.LocalAddr(), "ranks", s.n, "algorithm", alg.Name(), "test_clock", c.TestClock != nil)
	return []Source{s}, nil
}

func (s *hcaSource) Name() string            { return "hca" }
func (s *hcaSource) Interval() time.Duration { return s.cfg.Interval }

// Collect ships the records the endpoint and the driver made since the last
// call.
func (s *hcaSource) Collect(_ context.Context, b *Batch) error {
	s.mu.Lock()
	p := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(p) == 0 {
		return ErrNoData
	}
	for _, r := range p {
		b.Add(r.measurement, r.t, r.tags, r.fields...)
	}
	return nil
}

func (s *hcaSource) Close() error {
	s.cancel()
	s.wg.Wait()
	return s.ep.Close()
}

// SelfFields are the endpoint's counters and the source's own.
func (s *hcaSource) SelfFields() []record.Field {
	st := s.ep.Stats()
	f := []record.Field{
		record.Uint("sent", st.Sent), record.Uint("received", st.Received), record.Uint("answered", st.Answered),
		record.Uint("runs", st.Runs), record.Uint("matched", st.Matched), record.Uint("kernel_stamped", st.KernelStamped),
		record.Uint("dropped_unauthenticated", st.DroppedUnauthenticated), record.Uint("dropped_replayed", st.DroppedReplayed),
		record.Uint("dropped_foreign_session", st.DroppedForeignSession), record.Uint("dropped_malformed", st.DroppedMalformed),
		record.Uint("dropped_misaddressed", st.DroppedMisaddressed), record.Uint("dropped_unmatched", st.DroppedUnmatched),
		record.Uint("dropped_busy", st.DroppedBusy), record.Uint("lost", st.Lost), record.Uint("send_errors", st.SendErrors),
		record.Uint("rounds", s.rounds.Load()), record.Uint("round_failures", s.failures.Load()),
		record.Uint("models_sent", s.modelsSent.Load()), record.Uint("models_undelivered", s.modelsUndelivered.Load()),
		record.Uint("models_taken", s.modelsTaken.Load()), record.Uint("models_refused", s.modelsRefused.Load()),
		record.Uint("bound_exceeded", s.boundExceeded.Load()),
	}
	if m, round, ok := s.global.Model(); ok {
		x := s.global.Now()
		f = append(f, record.Int("model_round", round), record.Int("bound_now_ns", hca.Bound(m, x)))
	}
	if p := s.lastErr.Load(); p != nil {
		f = append(f, record.String("last_error", *p))
	}
	return f
}

// fail logs and keeps an error.
func (s *hcaSource) fail(what string, err error) {
	msg := what + ": " + err.Error()
	s.lastErr.Store(&msg)
	s.log.Warn("hca "+what+" failed; the last model stays in use, its bound growing", "err", err)
}

func (s *hcaSource) add(r pendingRecord) {
	s.mu.Lock()
	s.pending = append(s.pending, r)
	s.mu.Unlock()
}

// onModel takes this rank's model from rank 0 (on the endpoint's goroutine).
func (s *hcaSource) onModel(from int, round int64, m timebase.LinearModel) {
	if from != 0 {
		s.modelsRefused.Add(1)
		return
	}
	s.global.Set(m, round)
	s.modelsTaken.Add(1)
	rt, _ := timebase.Realtime.Now()
	s.add(pendingRecord{"hca_model", rt, s.tags, modelFields(m, round, s.global.Now())})
}

// modelFields describe a model, its bound at local time x.
func modelFields(m timebase.LinearModel, round, x int64) []record.Field {
	return []record.Field{
		record.Int("round", round), record.Float("slope", m.Slope), record.Int("intercept_ns", m.Intercept),
		record.Int("origin_ns", m.Origin), record.Float("slope_err", m.SlopeErr), record.Float("residual_ns", m.ResidualNS),
		record.Int("points", int64(m.N)), record.Int("mean_x_ns", m.MeanX), record.Int("floor_ns", m.FloorNS),
		record.Int("bound_ns", hca.Bound(m, x)),
	}
}

// drive runs rounds until ctx ends.
func (s *hcaSource) drive(ctx context.Context) {
	net, err := hca.NewPeerNetwork(s.ep, s.n)
	if err != nil {
		s.fail("driver", err)
		return
	}
	var wait time.Duration
	for round := int64(1); ; {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		res, err := s.round(ctx, net, round)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			s.failures.Add(1)
			s.fail("sync round "+strconv.FormatInt(round, 10), err)
			wait = s.cfg.RetryAfter
		default:
			s.rounds.Add(1)
			round++
			wait = s.untilResync(res.Models)
		}
	}
}

// round runs one synchronisation and hands out and ships its models.
func (s *hcaSource) round(ctx context.Context, net *hca.PeerNetwork, round int64) (hca.Result, error) {
	for r := 1; r < s.n; r++ {
		if err := s.reach(ctx, r); err != nil {
			return hca.Result{}, err
		}
	}
	res, err := s.alg.Sync(ctx, net, s.params)
	if err != nil {
		return res, err
	}
	end := s.global.Now()
	rt, _ := timebase.Realtime.Now()
	var undelivered, maxBound int64
	for r := 1; r < s.n; r++ {
		m := res.Models[r]
		if err := s.give(ctx, r, round, m); err != nil {
			undelivered++
			s.modelsUndelivered.Add(1)
			s.fail("model for rank "+strconv.Itoa(r), err)
		}
		x := end + m.Intercept // rank r's clock, near enough for a bound
		maxBound = max(maxBound, hca.Bound(m, x))
		tags := []record.Tag{{Key: "algorithm", Value: s.alg.Name()}, {Key: "rank", Value: strconv.Itoa(r)}}
		s.add(pendingRecord{"hca_model", rt, tags, modelFields(m, round, x)})
	}
	s.add(pendingRecord{"hca_sync", rt, []record.Tag{{Key: "algorithm", Value: s.alg.Name()}}, []record.Field{
		record.Int("round", round), record.Int("nodes", int64(s.n)), record.Int("duration_ns", res.DurationNS),
		record.Int("messages", res.Messages), record.Int("exchanges", res.Exchanges), record.Int("lost", res.Lost),
		record.Int("rejected", int64(res.Rejected)), record.Int("max_bound_ns", maxBound),
		record.Int("models_undelivered", undelivered),
	}})
	if maxBound > int64(s.cfg.MaxBound) {
		s.boundExceeded.Add(1)
	}
	s.log.Debug("hca round", "round", round, "duration", time.Duration(res.DurationNS), "messages", res.Messages, "max_bound_ns", maxBound)
	return res, nil
}

// reach pings rank r until it answers, up to three times.
func (s *hcaSource) reach(ctx context.Context, r int) error {
	var err error
	for range 3 {
		if _, err = s.ep.Ping(ctx, r); err == nil {
			return nil
		}
	}
	return fmt.Errorf("rank %d does not answer (down, another key, or another peer list): %w", r, err)
}

// give sends rank r its model, up to three times.
func (s *hcaSource) give(ctx context.Context, r int, round int64, m timebase.LinearModel) error {
	var err error
	for range 3 {
		if err = s.ep.SendModel(ctx, r, round, m); err == nil {
			s.modelsSent.Add(1)
			return nil
		}
		if !errors.Is(err, hca.ErrLost) {
			return err
		}
	}
	return err
}

// untilResync is the time to the next round: hca.resync, or sooner when
// the predicted bound of a model passes hca.max_bound, but not sooner than
// hca.retry_after.
func (s *hcaSource) untilResync(models []timebase.LinearModel) time.Duration {
	now := s.global.Now()
	step := max(s.cfg.Resync/64, time.Millisecond)
	for d := step; d < s.cfg.Resync; d += step {
		for _, m := range models[1:] {
			if hca.Bound(m, now+m.Intercept+int64(d)) > int64(s.cfg.MaxBound) {
				return max(d, s.cfg.RetryAfter)
			}
		}
	}
	return s.cfg.Resync
}
