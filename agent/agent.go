package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/monagent/monagent/agent/judging"
	"github.com/monagent/monagent/collect"
	"github.com/monagent/monagent/faultlog"
	"github.com/monagent/monagent/record"
	"github.com/monagent/monagent/sink"
	"github.com/monagent/monagent/status"
	"github.com/monagent/monagent/timebase"
)

// Agent runs the configured sources and hands their records to a sink.
type Agent struct {
	cfg         Config
	log         *slog.Logger
	out         sink.Sink
	outputs     *Outputs // nil when a test hands in a bare sink
	sources     []*running
	translators *timebase.Translators
	host        string
	start       int64

	queue       *sink.Batches // between the sources and the writer; it counts what it drops
	written     atomic.Uint64
	writeErrors atomic.Uint64
	writeLog    faultlog.Log // the outputs' failures (writer goroutine only)

	judges *judging.Judges    // the judged clocks
	pub    *judging.Publisher // the time API; nil when off
	http   *status.Server     // /metrics and /status; nil when http.listen is ""
	prom   status.Records     // the latest self-metrics, for /metrics
	latest *status.Latest     // the sources' latest measurements, for /metrics
	build  *status.BuildInfo
}

// running is a source with its counts, and what of its failures is logged
// (its collecting goroutine only).
type running struct {
	collect.Counted
	log faultlog.Log
}

// New opens the outputs and builds the sources of cfg. The agent closes both
// when Run returns.
func New(cfg Config, log *slog.Logger) (*Agent, error) {
	out, err := OpenOutputs(&cfg)
	if err != nil {
		return nil, cfg.Place(err)
	}
	out.SetLogger(log) // the shipper says once per state change what is wrong and how to fix it
	a, err := newAgent(cfg, log, out.Sink)
	if err != nil {
		out.Close()
		return nil, cfg.Place(err)
	}
	a.outputs = out
	if cfg.HTTP.Listen != "" {
		if a.http, err = status.Listen(cfg.HTTP.Listen, a.registry(), a.status, cfg.HTTP.Limits()); err != nil {
			a.pub.Close(log)
			a.closeSources()
			out.Close()
			return nil, cfg.Place(&KeyError{Key: "http.listen", Reason: err.Error(), Err: err})
		}
		if cfg.HTTP.Pprof {
			a.http.Profiles()
		}
	}
	return a, nil
}

// registry is what /metrics serves: the judged clocks, the sources' latest
// measurements, the self-metrics, the build, and the process's own (memory,
// CPU, descriptors, Go runtime); with host tags, every series carries them
// and host as labels.
func (a *Agent) registry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.latest) // its descriptors carry the tags already
	prometheus.WrapRegistererWith(a.cfg.Tags.labels(a.host), reg).MustRegister(
		status.Judged{Set: a.judges.Set(), Now: timebase.RealtimeNS},
		status.CrossCheck{Doc: a.status}, &a.prom, a.build,
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return reg
}

// SetVersion names the agent's version in monagent_build_info (the
// binary's; by default the build's commit).
func (a *Agent) SetVersion(v string) { a.build.Version = v }

// status is the /status document now.
func (a *Agent) status() status.Doc {
	now := timebase.RealtimeNS()
	return a.judges.Status(now)
}

func newAgent(cfg Config, log *slog.Logger, out sink.Sink) (*Agent, error) {
	host := cfg.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	a := bare(cfg, log, out, host)
	var err error
	if err = a.judges.Webhooks(cfg.Notify.Sender); err != nil {
		if ke := (*KeyError)(nil); !errors.As(err, &ke) {
			err = &KeyError{Key: "notify", Reason: err.Error(), Err: err}
		}
		return nil, err
	}
	env := &Env{Config: &a.cfg, Log: log, Translators: a.translators, judges: a.judges}
	if cfg.HCA.Enabled {
		env.Global = newGlobal(cfg.HCA)
	}
	var pubErr error
	a.pub, pubErr = openTimePub(&a.cfg, env.Global, log)
	a.judges.Publish(a.pub)
	for _, sec := range sections() {
		for _, k := range sec.sources {
			if !k.enabled(&a.cfg) {
				continue
			}
			srcs, err := k.build(env)
			if err != nil {
				a.pub.Close(log)
				a.closeSources()
				return nil, fmt.Errorf("source %s: %w", k.name, err)
			}
			a.add(srcs...)
		}
	}
	if pubErr != nil {
		// The measurements go on without the time API (said once the
		// configuration is known good: a configuration error is the
		// one line a failed start prints).
		log.Error("time API off", "err", pubErr)
	}
	return a, nil
}

// bare is the agent of cfg without its sources.
func bare(cfg Config, log *slog.Logger, out sink.Sink, host string) *Agent {
	return &Agent{cfg: cfg, log: log, out: out, translators: timebase.NewTranslators(), host: host, queue: sink.NewBatches(cfg.Memory.QueueBytes),
		latest: status.NewLatest(cfg.Tags.labels(host)), build: newBuildInfo(),
		judges: judging.New(judging.Options{Host: host, Log: log, RecordSteps: !clockWatchesRealtime(cfg.Clock), Reference: hcaReference(cfg.HCA)})}
}

// clockWatchesRealtime says the clock source records REALTIME's steps
// (clock_step): then the judge does not record them twice.
func clockWatchesRealtime(c ClockConfig) bool {
	if !c.Enabled {
		return false
	}
	for _, name := range c.Clocks {
		if d, err := timebase.ParseDomain(name); err == nil && d == timebase.DomainRealtime {
			return true
		}
	}
	return false
}

// add adds sources to run.
func (a *Agent) add(srcs ...collect.Source) {
	for _, s := range srcs {
		a.sources = append(a.sources, &running{Counted: collect.Counted{Source: s}})
	}
}

// Outputs are the agent's outputs (nil in tests that hand in a sink).
func (a *Agent) Outputs() *Outputs { return a.outputs }

// Translators are the clock models the sources maintain.
func (a *Agent) Translators() *timebase.Translators { return a.translators }

// Sources names the running sources.
func (a *Agent) Sources() []string {
	var n []string
	for _, r := range a.sources {
		n = append(n, r.Source.Name())
	}
	return n
}

// Run collects until ctx is done, then stops every source, writes what is
// queued and the final self-metrics, and closes the sink. Every goroutine the
// agent or a source needs runs under ctx and has returned when Run returns.
func (a *Agent) Run(ctx context.Context) error {
	a.start = timebase.RealtimeNS()
	if a.outputs != nil && a.outputs.Spool != nil {
		a.outputs.Spool.Start() // runs until the spool closes, at the end of Run
	}
	var readers, wg sync.WaitGroup
	for _, r := range a.sources {
		if rn, ok := r.Source.(collect.Runner); ok {
			readers.Go(func() { rn.Run(ctx) })
		}
		wg.Go(func() { a.loop(ctx, r) })
	}
	if a.cfg.SelfMetrics.Enabled {
		wg.Go(func() {
			t := time.NewTicker(a.cfg.SelfMetrics.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
					a.enqueue(a.selfMetrics())
				}
			}
		})
	}
	wg.Go(func() { a.judges.Serve(ctx, a.http, a.host, a.enqueue) })
	shipped := make(chan struct{})
	if a.outputs != nil && a.outputs.Shipper != nil {
		go func() {
			defer close(shipped)
			if err := a.outputs.Shipper.Run(ctx); err != nil {
				a.log.Error("influx shipper stopped", "err", err)
			}
		}()
	} else {
		close(shipped)
	}
	done := make(chan struct{})
	idler, _ := a.out.(sink.Idler)
	go func() { // the only writer to the sink
		defer close(done)
		for {
			recs, ok := a.queue.Get()
			if !ok {
				return
			}
			a.write(recs)
			// Nothing more queued: the spool writes now, in the sources'
			// instant, not FlushInterval later in one of its own (issue 37).
			if n, _ := a.queue.State(); n == 0 && idler != nil {
				idler.Idle()
			}
		}
	}()
	wg.Wait()
	readers.Wait()
	// What the readers queued since the last collection is shipped, not lost.
	// The last batches wait for room in the queue rather than drop: no source
	// is left to hold up, and the writer never waits for long.
	a.queue.Drain()
	final, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	for _, r := range a.sources {
		if _, ok := r.Source.(collect.Runner); ok {
			a.collect(final, r)
		}
	}
	cancel()
	a.pub.Close(a.log) // readers get void, not the last interval
	if a.cfg.SelfMetrics.Enabled {
		a.enqueue(a.selfMetrics())
	}
	a.queue.Close()
	<-done
	<-shipped // the shipper reads the spool: stop it before the spool closes
	return errors.Join(a.closeSources(), a.out.Close())
}

// Abort is the way out when waiting is not wanted (a second signal while Run
// stops): the spool writes and fsyncs what it holds and closes, so nothing it
// accepted is lost; what else is left (records queued for it, the shipper's
// unacknowledged batch, which is re-sent after a restart) is said in the
// returned lines. The process should exit after it; Run may still be running.
func (a *Agent) Abort() []string {
	a.pub.Close(a.log)
	queued, _ := a.queue.State()
	var out []string
	if a.outputs != nil && a.outputs.Spool != nil {
		if err := a.outputs.Spool.Close(); err != nil {
			out = append(out, fmt.Sprintf("spool close: %v", err))
		}
		out = append(out, a.outputs.Summary()...)
	}
	if queued > 0 {
		out = append(out, fmt.Sprintf("%d batches of records were still queued for the outputs and are not written", queued))
	}
	return out
}

func (a *Agent) loop(ctx context.Context, r *running) {
	iv := r.Source.Interval()
	a.collect(ctx, r) // the first at once
	// Then on multiples of the interval on CLOCK_MONOTONIC (the timers'
	// clock, collect.UntilBoundary): every wake-up costs the runtime's
	// threads (issue 37).
	first := time.NewTimer(collect.UntilBoundary(iv))
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C:
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	// No collection starts after cancellation, although a select whose tick
	// and ctx are both ready picks either.
	for ctx.Err() == nil {
		a.collect(ctx, r)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (a *Agent) collect(ctx context.Context, r *running) {
	if a.deferred(r) {
		return
	}
	b := &collect.Batch{Host: a.host}
	err := r.Counted.Collect(ctx, b)
	if !errors.Is(err, collect.ErrNoData) {
		r.log.Note(a.log, time.Now(), err, "collection", "source", r.Source.Name())
	}
	if len(b.Records) > 0 {
		a.latest.Update(b.Records)
		a.enqueue(b.Records)
	}
}

// deferred says whether a source's collection is put off this time
// (counted, monagent_source deferred): a source with a backlog of its own
// (an event source's ring) leaves its events there while the outputs are
// behind (the queue holds more than a quarter of memory.queue_bytes),
// until its ring is half full. An edge waits in a ring in 40-80 bytes,
// allocated once; as a record in the queue it takes ten times that on the
// heap. So a writer that falls behind (a busy CPU, a slow card) holds the
// sources back instead of growing the heap, the queue's bound is left for
// the polled sources, and a stall too long for the rings loses events at
// a ring (ring_dropped) rather than whole batches at the queue. Never once
// the queue drains at the stop.
func (a *Agent) deferred(r *running) bool {
	bl, ok := r.Source.(collect.Backlogged)
	if !ok || a.queue.Draining() {
		return false
	}
	if _, bytes := a.queue.State(); bytes <= a.cfg.Memory.QueueBytes/4 {
		return false
	}
	if waiting, capacity := bl.Backlog(); waiting >= capacity/2 {
		return false
	}
	r.Counted.Defer()
	return true
}

// enqueue hands a batch to the writer without waiting (until the queue
// drains at the end of Run); beyond the queue's bound (memory.queue_bytes)
// the batch is dropped and counted.
func (a *Agent) enqueue(recs []record.Record) { a.queue.Put(recs) }

// write hands a batch to the outputs: the spool first, which never waits,
// then the optional outputs, each of which queues its own copy or drops it,
// counted. A failure is counted every time and logged when it changes.
func (a *Agent) write(recs []record.Record) {
	// Every record is handed to every output; what each kept is its own count
	// (monagent_spool appended, monagent_output written), so that one
	// output's refusal does not hide what the others took.
	a.written.Add(uint64(len(recs)))
	err := a.out.Write(recs)
	if err != nil {
		a.writeErrors.Add(1)
	}
	a.writeLog.Note(a.log, time.Now(), err, "output")
}

// selfMetrics returns the agent's own records: one per source and one overall.
func (a *Agent) selfMetrics() []record.Record {
	now := timebase.RealtimeNS()
	b := &collect.Batch{Host: a.host}
	for _, r := range a.sources {
		b.Add("monagent_source", now, []record.Tag{{Key: "source", Value: r.Source.Name()}}, r.Fields()...)
	}
	if a.outputs != nil {
		a.outputs.SelfRecords(b, now)
	}
	a.judges.Records(b, now)
	queued, queuedBytes := a.queue.State()
	qs := a.queue.Stats()
	b.Add("monagent", now, nil,
		record.Int("uptime_ns", now-a.start),
		record.Uint("batches", qs.Batches),
		record.Uint("records_out", a.written.Load()),
		record.Uint("dropped_batches", qs.DroppedBatches),
		record.Uint("dropped_records", qs.DroppedRecords),
		record.Int("queued_batches", int64(queued)),
		record.Int("queued_bytes", queuedBytes),
		record.Uint("output_errors", a.writeErrors.Load()),
	)
	a.prom.Set(b.Records)
	return b.Records
}

func (a *Agent) closeSources() error {
	var errs []error
	for _, r := range a.sources {
		errs = append(errs, r.Source.Close())
	}
	return errors.Join(errs...)
}
