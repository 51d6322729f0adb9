// Package influx ships a spool to InfluxDB through the v2 write API
// (/api/v2/write), which InfluxDB 1.8 (bucket "db/rp", token "user:pass"),
// 2.x and 3.x all serve.
//
// It uses influxdb-client-go/v2's WriteAPIBlocking, one request at a time, under
// its own batching, retry and acknowledgement: the client's non-blocking WriteAPI
// keeps about ten batches in memory, discards them on Close and blocks callers
// when the server hangs, so it is not used. A batch leaves the spool only when the
// server has confirmed it (204) or has rejected lines of it for good.
//
// Every answer is classified (docs/influx.md has the table) from its body,
// which the shipper's HTTP transport keeps: the client library reads only
// "code" and "message", not the "error" of 1.8 and 3.x nor the "data" of
// 3.x. Lines a server refuses with a reason (a line it could not parse, a
// field type conflict, a timestamp beyond retention, a schema limit) go to a
// dead-letter file with that reason (one fsync per batch) and are counted by
// reason. Lines the answer names (1.x/2.x quote them, 3.x numbers them) are
// dead-lettered at once, and the rest is sent again only if the server did
// not write it; otherwise the batch is bisected: a batch of n lines with k
// refused takes at most 1+2k⌈log2 n⌉ requests. A 413 halves the batch until
// the pieces fit, and a 400 without a reason (a proxy's page, a cut-off body)
// is bisected too; but a line refused that way (or as too large) is
// dead-lettered only once the server has taken another part of the batch.
// Until then the batch is held, grows by the entries behind it, and is tried
// again slowly.
//
// Everything else is a server or network condition a person can fix, and is
// retried, never dead-lettered: 5xx, 408, 429 (honouring Retry-After), TLS
// and network errors, timeouts with capped, jittered exponential backoff;
// 401, 403, 404 (database or bucket missing) and 400s about the request
// itself (a database name, a malformed authorization header) more slowly
// (HoldBackoff).
//
// Each change of state (unauthorized, not found, unreachable, ...; and back to
// ok, with the outage's length and failed attempts) is logged on the optional
// logger with the cause and the fix, not each attempt: a state already logged
// in the last LogSummaryInterval is logged again at most 8 times in it (the
// rest are counted), and while writes fail a summary (attempts, last error)
// comes every LogSummaryInterval. Stats carries the state for self-metrics.
// Local failures (reading the spool, acknowledging, writing the dead-letter
// file) are logged, backed off and retried the same way: Run returns only when
// its context ends. A password in the URL is redacted from every error and
// log line.
//
// ReplayDeadLetter puts dead-lettered lines back into the spool once their
// cause is fixed.
package influx
