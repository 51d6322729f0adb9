package agent

import (
	"fmt"

	"github.com/monagent/monagent/conf"
)

// MemoryConfig bounds what the agent holds in memory: the queue between the
// sources and the outputs, each optional output's queue, and the whole
// configuration's need, which config check states and run refuses beyond
// Limit. run also gives Limit to the Go runtime as its soft memory limit
// (unless GOMEMLIMIT is set), so that the collector works harder rather than
// let the process grow past it.
type MemoryConfig struct {
	// Limit is the most the configuration may need (default 128 MiB, the
	// MemoryMax of configs/monagent.service, a quarter of a BeagleBone's RAM).
	Limit int64 `yaml:"limit"`
	// QueueBytes bounds the records waiting for the outputs (their memory);
	// a batch beyond it is dropped and counted (monagent dropped_records).
	QueueBytes int64 `yaml:"queue_bytes"`
	// OutputQueueBytes bounds, per optional output (stdout, output.file), the
	// encoded records waiting for it; a slow or stalled output drops its own
	// copies beyond it, counted (monagent_output dropped_full), and never
	// holds up the spool.
	OutputQueueBytes int64 `yaml:"output_queue_bytes"`
}

func (m *MemoryConfig) defaults() {
	*m = MemoryConfig{Limit: 128 << 20, QueueBytes: 16 << 20, OutputQueueBytes: 4 << 20}
}

// MaxRing is the most entries any ring may hold: a million events, more than
// a minute of a 10 kHz GPIO line between two collections.
const MaxRing = 1 << 20

// baseMemory is what the agent needs before any buffer: the Go runtime, the
// binary's code and data, goroutine stacks and the sources' small state
// (measured: `monagent run` idles at 11-14 MiB of RSS on amd64, see
// docs/performance.md).
const baseMemory = 24 << 20

// The bytes the agent's own buffers hold per entry.
const (
	influxLineBytes   = 512 // a shipped line, generously
	shipperBatchCopes = 3   // the batch's lines, its request body, its gzip
)

// memoryUse is one kind of buffer a section's sources hold, stated in the
// section's entry of the table (source_<x>.go): what an entry holds, its
// budget and its real size, and the buffers a configuration enables.
// MemoryNeed adds them up without naming any source;
// TestEventSizesWithinTheirBudget holds every size within its budget (on
// 64-bit and on 32-bit ARM), and TestEverySourceWithARingStatesItsMemory
// fails when a section with a ring states none.
type memoryUse struct {
	what  string         // what an entry holds: "edges"
	bytes int64          // an entry's budget, an upper bound on 64-bit and 32-bit ARM alike
	size  func() uintptr // an entry's real size in this build (unsafe.Sizeof of the event, and its heap)
	// buffers are the section's buffers of this kind, each at its key with
	// its entries, when its sources are on (none when off).
	buffers func(c *Config) []buffer
}

// buffer is one ring or table: its key in the configuration and its entries.
type buffer struct {
	key     string
	entries int
}

// rings is one buffer per entry of a section's list, keyed "<key>[i].ring".
func rings[T any](key string, list []T, ring func(T) int) []buffer {
	out := make([]buffer, len(list))
	for i, x := range list {
		out[i] = buffer{fmt.Sprintf("%s[%d].ring", key, i), ring(x)}
	}
	return out
}

// oneBuffer is a section's single buffer when on is true, none otherwise.
func oneBuffer(on bool, key string, entries int) []buffer {
	if !on {
		return nil
	}
	return []buffer{{key, entries}}
}

// MemoryNeed is what a configuration needs in memory at most, largest part
// first.
type MemoryNeed = conf.Need

// MemoryNeed is what the configuration needs in memory at most: the runtime,
// every ring, the queues, the spool's buffers and the shipper's batches.
func (c *Config) MemoryNeed() MemoryNeed {
	var m MemoryNeed
	add := m.Add
	add("runtime", baseMemory, "runtime, code, goroutines")
	add("memory.queue_bytes", c.Memory.QueueBytes, "records waiting for the outputs")
	if c.Output.Stdout {
		add("output.stdout", 3*c.Memory.OutputQueueBytes, "its queue, the batch being written, spare buffers")
	}
	if c.Output.File != "" {
		add("output.file", 3*c.Memory.OutputQueueBytes, "its queue, the batch being written, spare buffers")
	}
	if c.HTTP.Listen != "" {
		add("http.max_connections", c.HTTP.MemoryBytes(), "connections to /metrics and /status")
	}
	if c.Spool.Enabled {
		add("spool.buffer_bytes", c.Spool.Options().MemoryBytes(), "points waiting for the disk and the spool's buffers")
		if c.Influx.Enabled {
			add("influx.batch_points", int64(c.Influx.BatchPoints)*influxLineBytes*shipperBatchCopes, "the batch in flight")
		}
	}
	for _, sec := range sections() {
		for _, u := range sec.memory {
			for _, b := range u.buffers(c) {
				add(b.key, int64(b.entries)*u.bytes, u.what)
			}
		}
	}
	m.Sort()
	return m
}

// memoryCheck is the memory section's entry in the table: its checks span
// every section with a buffer.
type memoryCheck struct{ c *Config }

func (m *memoryCheck) defaults() { m.c.Memory.defaults() }

func (m *memoryCheck) check(p *problems) {
	mc := m.c.Memory
	if mc.QueueBytes < 1<<20 {
		p.Add("memory.queue_bytes", "%d is less than 1 MiB: a collection's batch would not fit", mc.QueueBytes)
	}
	if mc.OutputQueueBytes < 64<<10 {
		p.Add("memory.output_queue_bytes", "%d is less than 64 KiB: a collection's batch would not fit", mc.OutputQueueBytes)
	}
	if mc.Limit < baseMemory {
		p.Add("memory.limit", "%d is less than the runtime alone needs (%s)", mc.Limit, conf.MiB(baseMemory))
		return
	}
	need := m.c.MemoryNeed()
	if need.Total() > mc.Limit {
		// Named at the largest part that is not the base, the one to lower.
		key := need[0].Key
		if key == "runtime" && len(need) > 1 {
			key = need[1].Key
		}
		p.Add(key, "the configuration's memory %s, more than memory.limit %s: lower it or raise the limit if the board has the memory", need, conf.MiB(mc.Limit))
	}
}

// ring checks a ring's size: a power of two, at most MaxRing.
func checkRing(p *problems, key string, n int) {
	switch {
	case n < 1 || n&(n-1) != 0:
		p.Add(key, "%d is not a power of two", n)
	case n > MaxRing:
		p.Add(key, "%d entries is more than the largest ring, %d", n, MaxRing)
	}
}

// memorySection is the memory section's entry in the table (config.go).
var memorySection = section{key: "memory", of: func(c *Config) sectionConfig { return &memoryCheck{c} }}
