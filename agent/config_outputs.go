package agent

import (
	"github.com/monagent/monagent/conf"
	"github.com/monagent/monagent/notify"
	"github.com/monagent/monagent/sink/influx"
	"github.com/monagent/monagent/sink/spool"
	"github.com/monagent/monagent/status"
)

// The output sections (outputs.go): output (stdout, a file), spool and
// influx; and the endpoints: http (/metrics, /status) and notify (webhooks).
// Only output's type is the agent's: each of the others is its library's
// (as telegraf's plugins own their configuration), entering the table
// through lib.

// The sections the libraries define, under the agent's names.
type (
	SpoolConfig   = spool.Config      // sink/spool/config.go
	InfluxConfig  = influx.Section    // sink/influx/section.go
	HTTPConfig    = status.HTTPConfig // status/config.go
	NotifyConfig  = notify.Config     // notify/config.go
	WebhookConfig = notify.Webhook
)

// DefaultHTTPListen is where the endpoint listens unless told otherwise.
const DefaultHTTPListen = status.DefaultHTTPListen

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

// libConfig is a section whose type is its library's: its methods are
// exported, and it may have Board(*conf.List) (settings only the board can
// confirm, which take no paths) and Advise(*conf.List).
type libConfig interface {
	Defaults()
	Check(p *conf.List)
}

// lib is a library's section in the table (sectionConfig, boardChecker,
// adviser): board and advise call its Board and Advise where it has them.
type lib struct{ libConfig }

func (l *lib) defaults()         { l.Defaults() }
func (l *lib) check(p *problems) { l.Check(p) }

func (l *lib) board(_ PathsConfig, p *problems) {
	if b, ok := l.libConfig.(interface{ Board(*conf.List) }); ok {
		b.Board(p)
	}
}

func (l *lib) advise(p *problems) {
	if a, ok := l.libConfig.(interface{ Advise(*conf.List) }); ok {
		a.Advise(p)
	}
}

// The output sections' and the endpoints' entries in the table (config.go):
// the agent opens them itself (outputs.go, agent.go, agent/judging).
var (
	outputSection = section{key: "output", of: func(c *Config) sectionConfig { return &outputs{c} }}
	spoolSection  = section{key: "spool", of: func(c *Config) sectionConfig { return &lib{&c.Spool} }}
	influxSection = section{key: "influx", of: func(c *Config) sectionConfig { return &lib{&c.Influx} }, fatal: true}
	httpSection   = section{key: "http", of: func(c *Config) sectionConfig { return &lib{&c.HTTP} }}
	notifySection = section{key: "notify", of: func(c *Config) sectionConfig { return &lib{&c.Notify} }, fatal: true}
)
