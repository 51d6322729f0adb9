package agent

import (
	"fmt"
	"log/slog"

	"github.com/monagent/monagent/collect"
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

// buildEach builds the sources of a section's list (key: "pps.devices"),
// each entry's in turn. When an entry fails, every source built so far (its
// own before the failure too) is closed and the error names the entry.
func buildEach[T any](key string, list []T, build func(x T) ([]collect.Source, error)) ([]collect.Source, error) {
	var out []collect.Source
	for i, x := range list {
		ss, err := build(x)
		out = append(out, ss...)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, keyErr(fmt.Sprintf("%s[%d]", key, i), "%v", err)
		}
	}
	return out, nil
}

// one is an entry's one source for buildEach, none when it failed.
func one[S collect.Source](s S, err error) ([]collect.Source, error) {
	if err != nil {
		return nil, err
	}
	return []collect.Source{s}, nil
}
