// Package agent is monagent's runtime: the typed configuration and its one
// table of sections (config.go), the measurement sources (source_<x>*.go, one
// prefix per source, each using only the kit in source.go and the core), the
// lifecycle that runs them under a context and hands their records to the
// sinks, and the agent's own metrics. The judged clocks, their votes and the
// time API's writer are package agent/judging; the output and endpoint
// sections' types live in the libraries they configure (status, notify,
// sink/spool, sink/influx). The inventory of a machine (monagent probe) is
// package inventory.
//
// The agent is the only place that logs; it injects a *slog.Logger into whatever
// needs one. Libraries below it return errors.
package agent
