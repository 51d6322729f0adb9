// Package status is a running agent's live view of its judged clocks: the
// /status JSON document, the Prometheus collectors of the judged clocks'
// states and bounds, of the sources' latest measurements (Latest: one place
// turning a record into metrics, by the Measurements table) and of the
// build, the HTTP server that serves both with the agent's other
// metrics within Limits (connections, idle and read timeouts, header size),
// and the client `monagent status` reads them with.
//
// Names follow Prometheus conventions (base units, _total counters, one
// gauge per state label); docs/schema.md lists them beside the InfluxDB
// measurements.
package status
