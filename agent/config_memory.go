package agent

import (
	"fmt"

	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/marker"
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

// The bytes each ring entry and its heap hold, upper bounds of the event
// types' sizes on 64-bit and 32-bit ARM alike (pinned by
// TestEventSizesWithinTheirBudget).
const (
	gpioEventBytes   = 40
	ppsEventBytes    = 24
	gnssEventBytes   = 160 // a decoded gpsd message; its device path is shared
	exttsEventBytes  = 40
	markerEventBytes = 216 + marker.MaxLen // the event and its strings
	scanEventBytes   = 80
	ptpExchangeBytes = 104
	ptpProbeRing     = 4096 // the PTP probe's ring (the event source's default)
	hcaRecordBytes   = 1536 // a queued hca_model or hca_sync record and its fields
	// markerSeriesBytes is a marker series: its name and tags (at most
	// MaxNameLen + MaxTags tags of MaxTagKeyLen + MaxTagValueLen), the map
	// entry and its time guard (16 times).
	markerSeriesBytes = marker.MaxNameLen + marker.MaxTags*(marker.MaxTagKeyLen+marker.MaxTagValueLen) + 512
	influxLineBytes   = 512 // a shipped line, generously
	shipperBatchCopes = 3   // the batch's lines, its request body, its gzip
)

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
		add("http.max_connections", c.HTTP.memoryBytes(), "connections to /metrics and /status")
	}
	if c.Spool.Enabled {
		add("spool.buffer_bytes", c.Spool.options().MemoryBytes(), "points waiting for the disk and the spool's buffers")
		if c.Influx.Enabled {
			add("influx.batch_points", int64(c.Influx.BatchPoints)*influxLineBytes*shipperBatchCopes, "the batch in flight")
		}
	}
	if c.GPIO.Enabled {
		for i, ch := range c.GPIO.Chips {
			add(fmt.Sprintf("gpio.chips[%d].ring", i), int64(ch.Ring)*gpioEventBytes, "edges")
		}
	}
	if c.PPS.Enabled {
		for i, d := range c.PPS.Devices {
			add(fmt.Sprintf("pps.devices[%d].ring", i), int64(d.Ring)*ppsEventBytes, "edges")
		}
	}
	if c.GNSS.Enabled {
		add("gnss.ring", int64(c.GNSS.Ring)*gnssEventBytes, "gpsd messages")
	}
	if c.Extts.Enabled {
		add("extts.ring", int64(c.Extts.Ring)*exttsEventBytes, "external timestamps")
	}
	if c.Marker.Enabled {
		add("marker.ring", int64(c.Marker.Ring)*markerEventBytes, "markers")
		add("marker.max_series", int64(c.Marker.MaxSeries)*markerSeriesBytes, "each series' key and time guard")
	}
	if c.Sensors.Enabled {
		for i, b := range c.Sensors.Buffers {
			add(fmt.Sprintf("sensors.buffers[%d].ring", i), int64(b.Ring)*scanEventBytes, "scans")
		}
	}
	if c.HCA.Enabled {
		add("hca.peers", int64(hcaRingSize(len(c.HCA.Peers)))*hcaRecordBytes, "model and sync records waiting")
	}
	if c.PTP.Enabled && c.PTP.Probe.Enabled {
		add("ptp.probe", ptpProbeRing*ptpExchangeBytes, "exchanges")
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
