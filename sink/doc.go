// Package sink turns records into InfluxDB line protocol (nanosecond precision)
// and writes them out. This file set holds the record model, the encoder and a
// sink for plain writers (stdout, a file); the durable spool and the InfluxDB
// writer build on them.
//
// Line protocol follows the InfluxDB reference (docs.influxdata.com, "Line
// protocol"); encoding and escaping are done by influxdata/line-protocol/v2, which
// also rejects what InfluxDB would reject (bad UTF-8, non-finite floats, keys with
// control characters). A rejected record is counted and named, and never takes the
// rest of its batch with it.
package sink
