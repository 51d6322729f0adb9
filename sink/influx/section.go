package influx

import (
	"time"

	"github.com/monagent/monagent/conf"
)

// Section is the influx section of the agent's configuration file: it ships
// the spool to InfluxDB's v2 write API (1.8: bucket "db/rp", token
// "user:pass"; 2.x/3.x: org, bucket, API token). It is not named Config:
// Config is the shipper's, which Section.Config fills.
type Section struct {
	Enabled bool   `yaml:"enabled"`
	URL     string `yaml:"url"`
	Org     string `yaml:"org"`
	Bucket  string `yaml:"bucket"`
	// The token comes from a file or an environment variable, never from the
	// configuration file, and is never logged.
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

// Defaults sets every key of the section to its default.
func (i *Section) Defaults() {
	*i = Section{
		TokenEnv: "MONAGENT_INFLUX_TOKEN", BatchPoints: 5000, BatchInterval: time.Second,
		Timeout: 10 * time.Second, MaxBackoff: time.Second, Gzip: true, DeadLetterMaxBytes: DefaultDeadLetterMaxBytes,
	}
}

// Check appends every problem of the section, under the keys influx.*.
func (i *Section) Check(p *conf.List) {
	if !i.Enabled {
		return
	}
	if err := CheckURL(i.URL); err != nil {
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

// Board checks that the token file is readable.
func (i *Section) Board(p *conf.List) {
	if i.Enabled {
		_, err := i.Token()
		p.AddErr(err)
	}
}

// Advise says when no token would be sent: right for an InfluxDB without
// authentication, and the cause of every 401 otherwise.
func (i *Section) Advise(p *conf.List) {
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
// variable; "" when neither is set (an InfluxDB without authentication). A
// file that cannot be read is a *conf.KeyError at influx.token_file.
func (i *Section) Token() (string, error) {
	tok, err := conf.ReadToken(i.TokenFile, i.TokenEnv)
	if err != nil {
		return "", &conf.KeyError{Key: "influx.token_file", Reason: conf.PathReason(err), Err: err}
	}
	return tok, nil
}

// Config is the shipper's configuration for this section, its token read
// (Token's error when it cannot be).
func (i *Section) Config() (*Config, error) {
	token, err := i.Token()
	if err != nil {
		return nil, err
	}
	return &Config{
		URL: i.URL, Org: i.Org, Bucket: i.Bucket, Token: token,
		BatchPoints: i.BatchPoints, BatchInterval: i.BatchInterval, Timeout: i.Timeout,
		MaxBackoff: i.MaxBackoff, Gzip: i.Gzip, DeadLetter: i.DeadLetter, DeadLetterMaxBytes: i.DeadLetterMaxBytes,
	}, nil
}
