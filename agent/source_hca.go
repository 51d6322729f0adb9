package agent

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/judge"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/timebase"
)

// hcaSource runs this agent's member of the clock synchronisation between
// agents (HCAConfig, hca.Node): every rank ships the model it takes from
// rank 0 (hca_model); rank 0 runs the rounds and ships every model and each
// round's figures (hca_sync). Failures are logged when they start, when
// they change and when they end, not every round.
//
// It is a collect.EventSource: the node's Serve is its producer, run
// by Run and returned from before Run returns, and its records wait in the
// event source's ring (counted when it overflows) for the next collection,
// the agent's last one at shutdown included. Building it binds the socket
// and starts nothing.
type hcaSource struct {
	*collect.EventSource[pendingRecord]
	cfg    HCAConfig
	log    *slog.Logger
	node   *hca.Node
	global *hca.Global
	n      int
	tags   []record.Tag // algorithm and rank
	judged *judgement   // this rank on the global timeline (not rank 0)

	qmu sync.Mutex // serialises the ring's two producers: the endpoint's goroutine (onModel) and the driver's (onRound)
	q   *collect.EventQueue[pendingRecord]

	roundLog, giveLog faultlog.Log           // what of the failing rounds and deliveries is logged (the driver's goroutine)
	roundErr          atomic.Pointer[string] // the failing rounds' error, nil once one succeeds
}

// pendingRecord is a record made on a goroutine of the source, shipped by
// the next Collect.
type pendingRecord struct {
	measurement string
	t           int64
	tags        []record.Tag
	fields      []record.Field
}

// hcaRing is the least capacity of the source's ring: records of 16
// rounds of 64 ranks, shipped every hca.interval; more ranks get 4 rounds'.
const hcaRing = 1024

// hcaRingSize is the ring of a cluster of n ranks.
func hcaRingSize(n int) int {
	ring := hcaRing
	for ring < 4*(n+1) {
		ring *= 2
	}
	return ring
}

func buildHCASource(env *Env) ([]collect.Source, error) {
	c := env.Config.HCA
	addrs, err := hca.ParsePeers(c.Peers)
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
		g = newGlobal(c)
	}
	log = log.With("source", "hca", "rank", c.Rank)
	s := &hcaSource{cfg: c, log: log, global: g, n: len(addrs),
		tags: []record.Tag{{Key: "algorithm", Value: alg.Name()}, {Key: "rank", Value: strconv.Itoa(c.Rank)}},
	}
	s.EventSource, err = collect.NewEventSource(collect.EventSourceConfig[pendingRecord]{Name: "hca", Interval: c.Interval, Ring: hcaRingSize(s.n),
		Producer: collect.ProducerFunc[pendingRecord](func(ctx context.Context, _ *collect.EventQueue[pendingRecord]) error { return s.node.Serve(ctx) }),
		Emit:     emitPending, Self: s.selfFields, Close: func() error { return s.node.Close() }})
	if err != nil {
		return nil, err
	}
	s.q = s.Queue()
	s.node, err = hca.NewNode(hca.NodeConfig{Cluster: hca.Cluster{Addrs: addrs, Algorithm: c.Algorithm}, Rank: c.Rank, Listen: c.Listen,
		Key: key, Timeout: c.Timeout, Algorithm: alg, Params: c.params(), Resync: c.Resync, MaxBound: c.MaxBound, RetryAfter: c.RetryAfter,
		Global: g, OnModel: s.onModel, OnRound: s.onRound})
	clear(key)
	if err != nil { // the configuration's checks leave binding the one failure
		return nil, keyErr("hca.listen", "%v", err)
	}
	if c.Rank != 0 { // a model is due every resync, one retry later at worst
		if s.judged, err = env.judges.Add("hca", "hca:rank"+strconv.Itoa(c.Rank), c.Judge, 2*c.Resync+c.RetryAfter); err != nil {
			s.node.Close()
			return nil, keyErr("hca.judge", "%v", err)
		}
	}
	s.log.Info("hca endpoint", "listen", s.node.LocalAddr(), "ranks", s.n, "algorithm", alg.Name(), "test_clock", c.TestClock != nil)
	return []collect.Source{s}, nil
}

func emitPending(b *collect.Batch, r *pendingRecord) { b.Add(r.measurement, r.t, r.tags, r.fields...) }

// selfFields are the endpoint's counters and the source's own; the event
// source adds the ring's, the agent last_error (collections only: a failed
// round is no failed collection, its class is round_error).
func (s *hcaSource) selfFields() []record.Field {
	st := s.node.Stats()
	f := []record.Field{
		record.Uint("sent", st.Sent), record.Uint("received", st.Received), record.Uint("answered", st.Answered),
		record.Uint("runs", st.Runs), record.Uint("matched", st.Matched), record.Uint("kernel_stamped", st.KernelStamped),
		record.Uint("dropped_unauthenticated", st.DroppedUnauthenticated), record.Uint("dropped_replayed", st.DroppedReplayed),
		record.Uint("dropped_stale_epoch", st.DroppedStaleEpoch), record.Uint("dropped_stale_model", st.DroppedStaleModel),
		record.Uint("dropped_foreign_session", st.DroppedForeignSession), record.Uint("dropped_malformed", st.DroppedMalformed),
		record.Uint("dropped_misaddressed", st.DroppedMisaddressed), record.Uint("dropped_unknown_source", st.DroppedUnknownSource),
		record.Uint("dropped_unmatched", st.DroppedUnmatched),
		record.Uint("dropped_busy", st.DroppedBusy), record.Uint("lost", st.Lost), record.Uint("send_errors", st.SendErrors),
		record.Uint("peer_restarts", st.PeerRestarts),
		record.Uint("rounds", st.Rounds), record.Uint("round_failures", st.RoundFailures), record.Uint("failing_rounds", st.FailingRounds),
		record.Uint("models_sent", st.ModelsSent), record.Uint("models_undelivered", st.ModelsUndelivered),
		record.Uint("models_taken", st.ModelsTaken), record.Uint("models_refused", st.ModelsRefused),
		record.Uint("bound_exceeded", st.BoundExceeded),
	}
	if m, round, ok := s.global.Model(); ok {
		x := s.global.Now()
		f = append(f, record.Int("model_round", round), record.Int("bound_now_ns", hca.Bound(m, x)))
	}
	roundErr := ""
	if p := s.roundErr.Load(); p != nil {
		roundErr = *p
	}
	return append(f, record.String("round_error", roundErr))
}

// What the log says of failing rounds and model deliveries, and what holds
// meanwhile.
const (
	roundWhat = "hca sync round"
	giveWhat  = "hca model delivery"
)

var (
	roundKeeps = []any{"meanwhile", "the last models stay in use, their bounds growing"}
	giveKeeps  = []any{"meanwhile", "the rank keeps its last model, its bound growing"}
)

func (s *hcaSource) add(r pendingRecord) {
	s.qmu.Lock()
	s.q.Put1(r) // a full ring counts the record as ring_dropped
	s.qmu.Unlock()
}

// onModel ships the model this rank took from rank 0 (on the endpoint's
// goroutine) and judges the rank by it.
func (s *hcaSource) onModel(round int64, m timebase.LinearModel) {
	rt := timebase.RealtimeNS()
	x := s.global.Now()
	s.add(pendingRecord{"hca_model", rt, s.tags, modelFields(m, round, x)})
	// The model's published bound (hca.Bound), grown at its slope's error.
	s.judged.Observe((*hcaRecords)(s), judge.Sample{TimeNS: rt, Synced: true, OffsetNS: m.Offset(x), BoundNS: hca.Bound(m, x),
		FreqErrPPB: int64(math.Ceil(math.Abs(m.SlopeErr) * 1e9))})
}

// hcaRecords puts records into the source's ring (sync_state from onModel).
type hcaRecords hcaSource

func (r *hcaRecords) Add(measurement string, t int64, tags []record.Tag, fields ...record.Field) {
	(*hcaSource)(r).add(pendingRecord{measurement, t, tags, fields})
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

// onRound ships and logs a round of the driver's (on its goroutine), before
// the node counts it: whoever sees a count sees its log line.
func (s *hcaSource) onRound(r hca.Round) {
	if r.Err != nil {
		class := hca.FailureKind(r.Err)
		s.roundLog.NoteKind(s.log, time.Now(), class, fmt.Errorf("round %d: %w", r.Number, r.Err), roundWhat, roundKeeps...)
		s.roundErr.Store(&class)
		return
	}
	alg, res := s.tags[0], r.Result
	for rank := 1; rank < s.n; rank++ {
		tags := []record.Tag{alg, {Key: "rank", Value: strconv.Itoa(rank)}}
		s.add(pendingRecord{"hca_model", r.Realtime, tags, modelFields(res.Models[rank], r.Number, r.RankClock(rank))})
	}
	s.add(pendingRecord{"hca_sync", r.Realtime, []record.Tag{alg}, []record.Field{
		record.Int("round", r.Number), record.Int("nodes", int64(s.n)), record.Int("duration_ns", res.DurationNS),
		record.Int("messages", res.Messages), record.Int("exchanges", res.Exchanges), record.Int("lost", res.Lost),
		record.Int("given_up", res.GivenUp), record.Int("fitpoints_skipped", res.FitpointsSkipped),
		record.Int("rejected", int64(res.Rejected)), record.Int("max_bound_ns", r.MaxBound),
		record.Int("models_undelivered", int64(len(r.Undelivered))),
	}})
	if len(r.Undelivered) == 0 {
		s.giveLog.NoteKind(s.log, time.Now(), "", nil, giveWhat)
	} else {
		var ranks []string
		for _, rank := range r.Undelivered {
			ranks = append(ranks, strconv.Itoa(rank))
		}
		s.giveLog.NoteKind(s.log, time.Now(), "ranks "+strings.Join(ranks, ", ")+" do not acknowledge their models", r.DeliveryErr, giveWhat, giveKeeps...)
	}
	s.log.Debug("hca round", "round", r.Number, "duration", time.Duration(res.DurationNS), "messages", res.Messages, "max_bound_ns", r.MaxBound)
	s.roundLog.NoteKind(s.log, time.Now(), "", nil, roundWhat)
	s.roundErr.Store(nil)
}

// hcaSection is the hca section's entry in the table (config.go).
var hcaSection = section{key: "hca", of: func(c *Config) sectionConfig { return &c.HCA }, fatal: true,
	sources: []sourceKind{{"hca", func(c *Config) bool { return c.HCA.Enabled }, buildHCASource}},
	memory: []memoryUse{{what: "model and sync records waiting", bytes: hcaRecordBytes, size: hcaRecordSize,
		buffers: func(c *Config) []buffer { return oneBuffer(c.HCA.Enabled, "hca.peers", hcaRingSize(len(c.HCA.Peers))) }}}}

// hcaRecordBytes is a queued hca_model or hca_sync record and its fields
// (the memory check's budget).
const hcaRecordBytes = 1536

// hcaRecordSize is the memory of a queued hca_model record: the ring's entry
// and its tag and field arrays.
func hcaRecordSize() uintptr {
	r := record.Record{Tags: make([]record.Tag, 2), Fields: modelFields(timebase.LinearModel{}, 1, 0)}
	return unsafe.Sizeof(pendingRecord{}) + uintptr(r.MemBytes())
}
