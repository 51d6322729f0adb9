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
// Only a 400 (or 2.x's 422) whose body InfluxDB really wrote — a partial write,
// a field type conflict, a line it could not parse — is the batch's fault: the
// batch is bisected, the refused lines go to a dead-letter file with the error
// (one fsync per batch) and are counted, and the rest are delivered. Everything
// else is a server or network condition a person can fix, and is retried with
// capped, jittered exponential backoff until the context ends: 401, 403, 404
// (database or bucket missing), a 400 with an unreadable or unknown body, 429,
// 5xx, TLS and network errors, timeouts. A 413 halves the batch until the pieces
// fit. A Retry-After header is honoured.
//
// Each change of state (unauthorized, not found, unreachable, ...; and back to
// ok, with the outage's length and backlog) is logged once, on the optional
// logger, with the cause and the fix; Stats carries the state for self-metrics.
// Local failures (reading the spool, acknowledging, writing the dead-letter
// file) are logged, backed off and retried the same way: Run returns only when
// its context ends.
//
// ReplayDeadLetter puts dead-lettered lines back into the spool once their
// cause is fixed.
package influx
