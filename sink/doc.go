// Package sink writes records (package record) out. Sink is what the agent
// writes to; Queued is an output that never waits for its writer (stdout, a
// line-protocol file, a FIFO), dropping beyond its bound and counting every
// record; Fanout writes to the durable spool first, then to each optional
// output. Batches is the queue of record batches waiting for the writer,
// bounded in memory. The durable spool (sink/spool) and the InfluxDB shipper
// (sink/influx) are its subpackages.
package sink
