package influx

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// logBurst is how many lines of one kind (the server's state, the local
// state, dead letters) the shipper logs per LogSummaryInterval for changes to
// states it has already logged in that interval; a change to a state not yet
// logged in it is always logged. Beyond that, events are counted
// (Stats.LogSuppressed) and the count goes into the next line of the kind: a
// server flapping between answers on every attempt logs a bounded number of
// lines, not one per attempt.
const logBurst = 8

// limiter passes, per window, the first line about each key and logBurst
// more.
type limiter struct {
	start      time.Time // of the current window
	n          int       // repeat lines passed in it
	seen       map[string]bool
	suppressed int // events refused since the last line passed
}

// allow says whether an event about key at now may be logged, how many were
// refused since the last one that was, and until when repeats will be
// refused if this is the last repeat the window allows (zero otherwise).
func (l *limiter) allow(now time.Time, window time.Duration, key string) (ok bool, missed int, until time.Time) {
	if now.Sub(l.start) >= window || l.seen == nil {
		l.start, l.n, l.seen = now, 0, map[string]bool{}
	}
	switch {
	case !l.seen[key]:
		l.seen[key] = true
	case l.n < logBurst:
		l.n++
		if l.n == logBurst {
			until = l.start.Add(window)
		}
	default:
		l.suppressed++
		return false, 0, time.Time{}
	}
	missed, l.suppressed = l.suppressed, 0
	return true, missed, until
}

// logf logs a line about key of l's kind unless l refuses it; true when
// logged.
func (s *Shipper) logf(l *limiter, key string, level slog.Level, msg string, attrs ...any) bool {
	if s.log == nil {
		return false
	}
	ok, missed, until := l.allow(time.Now(), s.cfg.LogSummaryInterval, key)
	if !ok {
		s.logSuppressed.Add(1)
		return false
	}
	if missed > 0 {
		msg = fmt.Sprintf("%s (%d similar events before this one were not logged)", msg, missed)
		attrs = append(attrs, "not_logged", missed)
	}
	if !until.IsZero() {
		msg = fmt.Sprintf("%s; changes to states already logged are only counted until %s", msg, until.UTC().Format(time.TimeOnly))
	}
	s.log.Log(context.Background(), level, s.scrub(msg), attrs...)
	return true
}

// succeeded records an answer from a working server (status: 204, or the
// status of a refusal with a reason), logging the end of an outage with its
// length and failed attempts.
func (s *Shipper) succeeded(status int) {
	s.mu.Lock()
	was, outage, failures := s.state, s.outage, s.failures
	s.state, s.outage, s.failures, s.lastStatus = StateOK, time.Time{}, 0, status
	s.mu.Unlock()
	if was == StateOK || s.log == nil {
		return
	}
	d := time.Since(outage)
	backlog := s.q.Stats().Pending
	s.logf(&s.srvLog, StateOK, slog.LevelInfo,
		fmt.Sprintf("InfluxDB reachable again after %v (%d failed attempts), %d points waiting", round(d), failures, backlog),
		"url", s.safeURL, "was", was, "outage_ns", int64(d), "failed_attempts", failures, "backlog_points", backlog)
}

// setStatus records the status of an answer that changes no state (a 413 or
// an unexplained 400 being isolated).
func (s *Shipper) setStatus(status int) {
	s.mu.Lock()
	s.lastStatus = status
	s.mu.Unlock()
}

// failed records a failed attempt. It logs a change of state (the cause and
// the fix), and while the state lasts, a summary every LogSummaryInterval.
func (s *Shipper) failed(a answer) {
	now := time.Now()
	s.mu.Lock()
	was := s.state
	s.state, s.lastStatus = a.state, a.status
	s.failures++
	failures := s.failures
	if s.outage.IsZero() {
		s.outage = now
	}
	outage := s.outage
	s.mu.Unlock()
	if was == StateOK {
		s.summarized = now
	}
	if s.log == nil {
		return
	}
	err := s.scrub(a.describe())
	if was != a.state && s.logf(&s.srvLog, a.state, slog.LevelError, s.advice(a), "url", s.safeURL, "state", a.state, "status", a.status, "err", err) {
		s.summarized = now
		return
	}
	if now.Sub(s.summarized) < s.cfg.LogSummaryInterval {
		return
	}
	s.summarized = now
	msg := fmt.Sprintf("InfluxDB writes still failing after %v (%s): %d failed attempts, last error: %s",
		round(now.Sub(outage)), a.state, failures, err)
	if n := s.srvLog.suppressed; n > 0 {
		msg += fmt.Sprintf("; %d state changes not logged", n)
		s.srvLog.suppressed = 0
	}
	s.log.Warn(s.scrub(msg), "url", s.safeURL, "state", a.state, "status", a.status, "failed_attempts", failures, "outage_ns", int64(now.Sub(outage)))
}

// advice is the one loud line for a new state: the cause and the fix.
func (s *Shipper) advice(a answer) string {
	switch a.state {
	case StateUnauthorized:
		return "InfluxDB answered 401 Unauthorized: check influx.token_file / influx.token_env; retrying"
	case StateForbidden:
		return fmt.Sprintf("InfluxDB answered 403 Forbidden: the token may not write to bucket %q; give it write permission or fix influx.token_file / influx.token_env; retrying", s.cfg.Bucket)
	case StateNotFound:
		return fmt.Sprintf("InfluxDB answered 404: database/bucket not found: create it or fix influx.bucket (%q); retrying (%s)", s.cfg.Bucket, a.msg)
	case StateBadRequest:
		return fmt.Sprintf("InfluxDB answered %d about the request, not its lines (%s): check influx.url, influx.bucket (%q), influx.org and the token; retrying", a.status, a.msg, s.cfg.Bucket)
	case StateUnreachable:
		return fmt.Sprintf("InfluxDB unreachable at %s: %s; retrying", s.safeURL, a.msg)
	case StateTLS:
		return fmt.Sprintf("TLS with InfluxDB at %s failed: %s; check the server certificate and influx.url; retrying", s.safeURL, a.msg)
	case StateTooLarge:
		return fmt.Sprintf("InfluxDB answered 413 Request Entity Too Large to every piece of a batch down to single lines and took none (%s): raise the server's request size limit; holding the batch and retrying", a.msg)
	case StateThrottled:
		return "InfluxDB answered 429 Too Many Requests: writes are throttled; retrying"
	case StateServerError:
		return fmt.Sprintf("InfluxDB answered %d: server error (%s); retrying", a.status, a.msg)
	}
	switch {
	case a.action == unexplained:
		return fmt.Sprintf("InfluxDB answered %d without a reason (%s) to every part of a batch it was sent, and took none: is a proxy in the way? Holding the batch and retrying; lines are dead-lettered for such answers only once the server takes others", a.status, a.msg)
	case a.status == 0:
		return fmt.Sprintf("writing to InfluxDB at %s failed before any answer (%s); retrying", s.safeURL, a.msg)
	}
	return fmt.Sprintf("InfluxDB answered %d, which a write does not expect (%s): check influx.url; retrying", a.status, a.msg)
}

// localFailed records a failing local step (reading the spool, acknowledging,
// writing the dead-letter file), logging when it changes.
func (s *Shipper) localFailed(step string, err error) {
	msg := s.scrub(err.Error())
	s.lastErr.Store(msg)
	s.mu.Lock()
	was := s.local
	s.local = step
	s.mu.Unlock()
	if was == "ok" {
		s.localSince, s.localFailures = time.Now(), 0
	}
	s.localFailures++
	if was != step {
		s.logf(&s.localLog, step, slog.LevelError, "influx shipper: "+step+" failing; backing off and retrying", "err", msg)
	}
}

func (s *Shipper) localOK() {
	s.mu.Lock()
	was := s.local
	s.local = "ok"
	s.mu.Unlock()
	if was != "ok" {
		s.logf(&s.localLog, "ok", slog.LevelInfo, fmt.Sprintf("influx shipper: %s working again after %v (%d failures)",
			was, round(time.Since(s.localSince)), s.localFailures))
	}
}

// logDeadLettered says a batch's refused lines are in the dead-letter file.
func (s *Shipper) logDeadLettered() {
	a := s.first
	s.logf(&s.deadLog, s.first.cause, slog.LevelWarn,
		fmt.Sprintf("InfluxDB refused %d lines of a batch for good (HTTP %d: %s); they are in %s: fix the cause, then 'monagent spool replay-deadletter' ships them again",
			s.nDead, a.status, a.msg, s.cfg.DeadLetter),
		"lines", s.nDead, "status", a.status)
}

// logDeadLetterFull says that rejected lines were not kept, the file at its
// cap (one line per kind of change, as the other states).
func (s *Shipper) logDeadLetterFull() {
	s.logf(&s.deadLog, "dead_letter_full", slog.LevelError,
		fmt.Sprintf("InfluxDB refused %d lines of a batch for good and the dead-letter file %s is at its cap (influx.dead_letter_max_bytes %d): they are not kept (counted in monagent_influx dead_letter_dropped); replay or move the file to make room",
			s.nDead, s.cfg.DeadLetter, s.cfg.DeadLetterMaxBytes),
		"lines", s.nDead)
}

// round keeps a duration readable: milliseconds under a minute, seconds
// beyond.
func round(d time.Duration) time.Duration {
	if d < time.Minute {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
