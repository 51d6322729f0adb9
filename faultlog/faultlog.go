package faultlog

import (
	"log/slog"
	"strings"
	"time"
)

// SummaryEvery is how often a failure that lasts is logged again, with its
// count: a board's log holds one line per change and a few per hour, not
// one per attempt (a full disk retried 12 times a second was ~860 k lines a
// day).
const SummaryEvery = 10 * time.Minute

// Log logs a recurring failure when it starts, when its kind changes
// and when it ends, and a summary at most every SummaryEvery while it lasts.
// The caller counts every occurrence; this only decides what is logged. Not
// safe for concurrent use: each failing thing has its own, used on one
// goroutine.
type Log struct {
	kind    string // Kind of the current failure, "" when all is well
	last    error  // its latest error, as it was (the log quotes it, not kind)
	since   time.Time
	count   uint64
	lastLog time.Time
}

// Note records the outcome of one attempt (err nil: it worked) and logs what
// changed. what names the thing that fails ("collection", "output"). One
// failure is told from another by its message with the numbers masked.
func (c *Log) Note(log *slog.Logger, now time.Time, err error, what string, attrs ...any) {
	kind := ""
	if err != nil {
		kind = Kind(err.Error())
	}
	c.NoteKind(log, now, kind, err, what, attrs...)
}

// NoteKind is Note with the failure's kind given by the caller (a text that
// stays the same while the same thing fails).
func (c *Log) NoteKind(log *slog.Logger, now time.Time, kind string, err error, what string, attrs ...any) {
	if err == nil {
		if c.kind != "" {
			log.Info(what+" recovered", append(attrs, "failures", c.count, "failing_for", now.Sub(c.since).Round(time.Millisecond).String(), "last", c.lastText())...)
		}
		c.kind, c.count, c.last = "", 0, nil
		return
	}
	if kind != c.kind {
		if c.kind == "" {
			c.since, c.count = now, 0
			log.Warn(what+" failed; every failure is counted, the log says when it changes or ends", append(attrs, "err", err)...)
		} else {
			log.Warn(what+" fails differently now", append(attrs, "err", err, "failures", c.count, "was", c.lastText())...)
		}
		c.kind, c.lastLog, c.last = kind, now, err
		c.count++
		return
	}
	c.last = err
	c.count++
	if now.Sub(c.lastLog) >= SummaryEvery {
		c.lastLog = now
		log.Warn(what+" still failing", append(attrs, "err", err, "failures", c.count, "since", c.since.UTC().Format(time.RFC3339))...)
	}
}

// lastText is the latest error's message (its kind if it had none).
func (c *Log) lastText() string {
	if c.last == nil {
		return c.kind
	}
	return c.last.Error()
}

// Kind is an error message with its numbers masked: one fault that
// carries a count, a sequence number or a port reads the same each time.
func Kind(msg string) string {
	if strings.IndexAny(msg, "0123456789") < 0 {
		return msg
	}
	b := make([]byte, 0, len(msg))
	digits := false
	for i := 0; i < len(msg); i++ {
		if c := msg[i]; c >= '0' && c <= '9' {
			if !digits {
				b = append(b, '#')
			}
			digits = true
			continue
		}
		digits = false
		b = append(b, msg[i])
	}
	return string(b)
}
