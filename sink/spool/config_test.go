package spool

import (
	"testing"

	"github.com/monagent/monagent/conf/conftest"
)

// Check names each bad key, only for an enabled spool; the defaults pass.
func TestConfigCheck(t *testing.T) {
	conftest.Checks(t, nil, []struct {
		Change func(*Config)
		Want   string
	}{
		{func(*Config) {}, ""},
		{func(s *Config) { s.Enabled, s.Dir = false, "" }, ""},
		{func(s *Config) { s.Dir = "" }, "spool.dir: "},
		{func(s *Config) { s.SegmentBytes = 4095 }, "spool.segment_bytes: must be at least 4096, got 4095"},
		{func(s *Config) { s.SegmentBytes, s.MaxBytes = 8192, 16383 }, "spool.max_bytes: must hold at least two segments (16384), got 16383"},
		{func(s *Config) { s.FlushInterval = 0 }, "spool.flush_interval: "},
		{func(s *Config) { s.FsyncInterval = -1 }, "spool.fsync_interval: "},
		{func(s *Config) { s.BufferBytes = 1<<20 - 1 }, "spool.buffer_bytes: must be at least 1 MiB (1048576), got 1048575"},
	})
}

// Options carry every key of the section to the spool.
func TestConfigOptions(t *testing.T) {
	s := Config{Enabled: true, Dir: "d", SegmentBytes: 1, MaxBytes: 2, FlushInterval: 3, FsyncInterval: 4, Compress: true, BufferBytes: 5}
	want := Options{Dir: "d", SegmentBytes: 1, MaxBytes: 2, FlushInterval: 3, FsyncInterval: 4, Compress: true, MaxBuffer: 5}
	if got := s.Options(); got != want {
		t.Errorf("options %+v, want %+v", got, want)
	}
}
