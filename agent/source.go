package agent

import (
	"log/slog"

	"github.com/monagent/monagent/hca"
	"github.com/monagent/monagent/timebase"
)

// Env is what a source gets when it is built.
type Env struct {
	Config      *Config
	Log         *slog.Logger
	Translators *timebase.Translators
	// Global places event times on the cluster's HCA timeline; nil when the
	// hca section is off.
	Global *hca.Global
	judges *judging // where a source's judged clocks are registered
}

// translators are the clock models, new ones for an Env a test made bare.
func (e *Env) translators() *timebase.Translators {
	if e.Translators == nil {
		e.Translators = timebase.NewTranslators()
	}
	return e.Translators
}
