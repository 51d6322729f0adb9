// Package sink writes records (package record) out: a sink for plain writers
// (stdout, a line-protocol file) and a fan-out to several sinks. The durable
// spool (sink/spool) and the InfluxDB shipper (sink/influx) build on it.
package sink
