package agent

import (
	"time"

	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
)

// The output sections (outputs.go): output (stdout, a file), spool and influx.

// OutputConfig is where records go besides the spool: stdout and a file.
type OutputConfig struct {
	Stdout bool   `yaml:"stdout"`
	File   string `yaml:"file"` // line protocol appended here; "" for none
}

// outputs is the output section's entry in the table: its checks span the
// spool and influx sections too.
type outputs struct{ c *Config }

func (o *outputs) defaults() { o.c.Output = OutputConfig{} }

// check checks that records go somewhere.
func (o *outputs) check(p *problems) {
	c := o.c
	// A board scraped by Prometheus alone (http.listen) keeps no records.
	if !c.Output.Stdout && c.Output.File == "" && !c.Spool.Enabled && c.HTTP.Listen == "" {
		p.Add("output", "nowhere to write: enable the spool, stdout, a file or http.listen")
	}
	if c.Influx.Enabled && !c.Spool.Enabled {
		p.Add("influx.enabled", "InfluxDB is fed from the spool: set spool.enabled: true")
	}
}

// SpoolConfig is the durable on-disk store every record goes through. With no
// InfluxDB configured it is the embedded store the report reads.
type SpoolConfig struct {
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

func (s *SpoolConfig) defaults() {
	*s = SpoolConfig{
		Enabled: true, Dir: "./data/spool", SegmentBytes: 4 << 20, MaxBytes: 256 << 20,
		FlushInterval: 100 * time.Millisecond, FsyncInterval: time.Second, Compress: true, BufferBytes: 16 << 20,
	}
}

func (s *SpoolConfig) check(p *problems) {
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

// options are the spool's options for this section.
func (s *SpoolConfig) options() spool.Options {
	return spool.Options{
		Dir: s.Dir, SegmentBytes: s.SegmentBytes, MaxBytes: s.MaxBytes, MaxBuffer: int(s.BufferBytes),
		FlushInterval: s.FlushInterval, FsyncInterval: s.FsyncInterval, Compress: s.Compress,
	}
}

// InfluxConfig ships the spool to InfluxDB's v2 write API (1.8: bucket "db/rp",
// token "user:pass"; 2.x/3.x: org, bucket, API token).
type InfluxConfig struct {
	Enabled bool   `yaml:"enabled"`
	URL     string `yaml:"url"`
	Org     string `yaml:"org"`
	Bucket  string `yaml:"bucket"`
	// The token comes from a file or an environment variable, never from this
	// file, and is never logged.
	TokenFile     string        `yaml:"token_file"`
	TokenEnv      string        `yaml:"token_env"`
	BatchPoints   int           `yaml:"batch_points"`
	BatchInterval time.Duration `yaml:"batch_interval"`
	Timeout       time.Duration `yaml:"timeout"`
	MaxBackoff    time.Duration `yaml:"max_backoff"`
	Gzip          bool          `yaml:"gzip"`
	DeadLetter    string        `yaml:"dead_letter"` // default: <spool.dir>/deadletter.lp
	// DeadLetterMaxBytes caps the dead-letter file; rejected lines beyond are
	// not kept, and counted (monagent_influx dead_letter_dropped).
	DeadLetterMaxBytes int64 `yaml:"dead_letter_max_bytes"`
}

func (i *InfluxConfig) defaults() {
	*i = InfluxConfig{
		TokenEnv: "MONAGENT_INFLUX_TOKEN", BatchPoints: 5000, BatchInterval: time.Second,
		Timeout: 10 * time.Second, MaxBackoff: time.Second, Gzip: true, DeadLetterMaxBytes: influx.DefaultDeadLetterMaxBytes,
	}
}

func (i *InfluxConfig) check(p *problems) {
	if !i.Enabled {
		return
	}
	if err := influx.CheckURL(i.URL); err != nil {
		p.Add("influx.url", "%v", err)
	}
	p.Set("influx.bucket", i.Bucket, ` ("db/rp" for InfluxDB 1.8)`)
	if i.BatchPoints < 1 {
		p.Add("influx.batch_points", "must be positive, got %d", i.BatchPoints)
	}
	p.Positive("influx.batch_interval", i.BatchInterval)
	p.Positive("influx.timeout", i.Timeout)
	p.Positive("influx.max_backoff", i.MaxBackoff)
	if i.DeadLetterMaxBytes < 4096 {
		p.Add("influx.dead_letter_max_bytes", "must be at least 4096 bytes, got %d", i.DeadLetterMaxBytes)
	}
}

// board checks that the token file is readable.
func (i *InfluxConfig) board(_ PathsConfig, p *problems) {
	if i.Enabled {
		_, err := i.Token()
		p.AddErr(err)
	}
}

// advise says when no token would be sent: right for an InfluxDB without
// authentication, and the cause of every 401 otherwise.
func (i *InfluxConfig) advise(p *problems) {
	if !i.Enabled {
		return
	}
	if tok, err := i.Token(); err == nil && tok == "" {
		key, where := "influx.token_env", "$"+i.TokenEnv+" is empty or unset"
		if i.TokenFile != "" {
			key, where = "influx.token_file", i.TokenFile+" is empty"
		} else if i.TokenEnv == "" {
			where = "neither token_file nor token_env is set"
		}
		p.Add(key, "no token: %s, so writes go unauthenticated (fine for an InfluxDB without authentication; otherwise every write is refused with 401)", where)
	}
}

// Token reads the InfluxDB token from token_file, else from the token_env
// variable; "" when neither is set (an InfluxDB without authentication).
func (i *InfluxConfig) Token() (string, error) {
	tok, err := influx.ReadToken(i.TokenFile, i.TokenEnv)
	if err != nil {
		return "", &KeyError{Key: "influx.token_file", Reason: influx.PathReason(err), Err: err}
	}
	return tok, nil
}

// The output sections' entries in the table (config.go): the agent opens
// them itself (outputs.go).
var (
	outputSection = section{key: "output", of: func(c *Config) sectionConfig { return &outputs{c} }}
	spoolSection  = section{key: "spool", of: func(c *Config) sectionConfig { return &c.Spool }}
	influxSection = section{key: "influx", of: func(c *Config) sectionConfig { return &c.Influx }, fatal: true}
)
