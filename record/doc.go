// Package record is the record every source emits — measurement, tags, typed
// fields and the time of the event it describes — and its encoding as InfluxDB
// line protocol (nanosecond precision). Sources build records with this package
// alone; they never import the sinks that store or ship them.
//
// Line protocol follows the InfluxDB reference (docs.influxdata.com, "Line
// protocol"); encoding and escaping are done by influxdata/line-protocol/v2, which
// also rejects what InfluxDB would reject (bad UTF-8, non-finite floats, keys with
// control characters). A rejected record is counted and named, and never takes the
// rest of its batch with it.
package record
