// Package agent is monagent's runtime: the typed configuration, the registry of
// measurement sources, the lifecycle that runs them under a context and hands their
// records to the sinks, the agent's own metrics, and the probe that inventories
// what a machine offers (clocks, PHCs, timestamping NICs, GPIO, PPS, sensors,
// chronyd and ptp4l sockets).
//
// The agent is the only place that logs; it injects a *slog.Logger into whatever
// needs one. Libraries below it return errors.
package agent
