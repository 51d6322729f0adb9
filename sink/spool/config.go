package spool

import (
	"time"

	"github.com/monagent/monagent/conf"
)

// Config is the spool section of the agent's configuration file: the
// durable on-disk store every record goes through. With no InfluxDB
// configured it is the embedded store the report reads.
type Config struct {
	Enabled       bool          `yaml:"enabled"`
	Dir           string        `yaml:"dir"`
	SegmentBytes  int64         `yaml:"segment_bytes"`
	MaxBytes      int64         `yaml:"max_bytes"` // whole oldest segments are dropped beyond this, and counted
	FlushInterval time.Duration `yaml:"flush_interval"`
	FsyncInterval time.Duration `yaml:"fsync_interval"`
	Compress      bool          `yaml:"compress"`
	// BufferBytes bounds the points waiting in memory for the disk (a slow
	// card, a full disk); beyond it appends are dropped and counted
	// (dropped_buffer, dropped_disk).
	BufferBytes int64 `yaml:"buffer_bytes"`
}

// Defaults sets every key of the section to its default.
func (s *Config) Defaults() {
	*s = Config{
		Enabled: true, Dir: "./data/spool", SegmentBytes: 4 << 20, MaxBytes: 256 << 20,
		FlushInterval: 100 * time.Millisecond, FsyncInterval: time.Second, Compress: true, BufferBytes: 16 << 20,
	}
}

// Check appends every problem of the section, under the keys spool.*.
func (s *Config) Check(p *conf.List) {
	if !s.Enabled {
		return
	}
	p.NotEmpty("spool.dir", s.Dir)
	if s.SegmentBytes < 4096 {
		p.Add("spool.segment_bytes", "must be at least 4096, got %d", s.SegmentBytes)
	} else if s.MaxBytes < 2*s.SegmentBytes {
		p.Add("spool.max_bytes", "must hold at least two segments (%d), got %d", 2*s.SegmentBytes, s.MaxBytes)
	}
	p.Positive("spool.flush_interval", s.FlushInterval)
	p.Positive("spool.fsync_interval", s.FsyncInterval)
	if s.BufferBytes < 1<<20 {
		p.Add("spool.buffer_bytes", "must be at least 1 MiB (1048576), got %d", s.BufferBytes)
	}
}

// Options are the spool's options for this section.
func (s *Config) Options() Options {
	return Options{
		Dir: s.Dir, SegmentBytes: s.SegmentBytes, MaxBytes: s.MaxBytes, MaxBuffer: int(s.BufferBytes),
		FlushInterval: s.FlushInterval, FsyncInterval: s.FsyncInterval, Compress: s.Compress,
	}
}
