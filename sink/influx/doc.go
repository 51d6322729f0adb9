// Package influx ships a spool to InfluxDB through the v2 write API
// (/api/v2/write), which InfluxDB 1.8 (bucket "db/rp", token "user:pass"),
// 2.x and 3.x all serve.
//
// It uses influxdb-client-go/v2's WriteAPIBlocking, one request at a time, under
// its own batching, retry and acknowledgement: the client's non-blocking WriteAPI
// keeps about ten batches in memory, discards them on Close and blocks callers
// when the server hangs, so it is not used. A batch leaves the spool only when the
// server has confirmed it (204) or has rejected it for good (a 4xx other than
// 429), in which case the offending lines are found by bisection, written to a
// dead-letter file with the error and counted, and the rest are delivered.
// "partial write" answers are such rejections, never successes.
//
// Retries (429, 5xx, network errors, timeouts) back off exponentially with
// jitter up to MaxBackoff (default 1 s, so the first retry after the server
// returns comes within a second); a 429/503 Retry-After header is honoured.
package influx
