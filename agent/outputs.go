package agent

import (
	"errors"

	"github.com/monagent/monagent/sink"
)

// Outputs are where records go (sink.Outputs): the durable spool, the
// InfluxDB shipper that drains it, stdout and a line-protocol file.
type Outputs = sink.Outputs

// outputKeys are the configuration keys of the outputs sink.OpenOutputs
// names when one fails.
var outputKeys = map[string]string{"file": "output.file", "spool": "spool.dir", "influx": "influx"}

// OpenOutputs opens the outputs cfg asks for. The spool does not flush
// before Agent.Run starts it: building the agent starts nothing.
func OpenOutputs(cfg *Config) (*Outputs, error) {
	oc := sink.OutputsConfig{Stdout: cfg.Output.Stdout, File: cfg.Output.File, QueueBytes: int(cfg.Memory.OutputQueueBytes)}
	if cfg.Spool.Enabled {
		opts := cfg.Spool.Options()
		opts.DeferFlush = true
		opts.IdleFlush = true // Run's writer tells it when its queue is empty
		oc.Spool = &opts
		if cfg.Influx.Enabled {
			var err error
			if oc.Influx, err = cfg.Influx.Config(); err != nil {
				return nil, err
			}
		}
	}
	o, err := sink.OpenOutputs(oc)
	if oe := (*sink.OpenError)(nil); errors.As(err, &oe) {
		return nil, keyErr(outputKeys[oe.Output], "%v", oe.Err)
	}
	return o, err
}
