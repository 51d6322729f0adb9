package influx

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// action is what the shipper does about a failed write (docs/influx.md has
// the table of answers behind each).
type action int

const (
	retry       action = iota // a server or network condition: retry with backoff, never dead-letter
	hold                      // a configuration state (401, 403, 404, a 400 about the request itself): retry slowly
	reject                    // the server refused lines for what they are, with its reason
	tooLarge                  // 413: split the batch until the pieces fit
	unexplained               // a 400/422 without a reason: bisect, dead-letter only with proof
)

func (a action) String() string {
	return [...]string{"retry", "hold", "reject", "too_large", "unexplained"}[a]
}

// Reasons a line was dead-lettered for, as counted in Stats.
const (
	causeSyntax      = "syntax"      // line protocol the server could not parse
	causeSchema      = "schema"      // a field type or schema conflict
	causeRetention   = "retention"   // a timestamp outside what the database keeps
	causeLimit       = "limit"       // a server limit: series, values per tag, columns, tables
	causeTooLarge    = "too_large"   // one line larger than the server takes in a request
	causeUnexplained = "unexplained" // a 400 without a reason, isolated by bisection
	causeOther       = "other"
)

// answer is a failed write's answer, decoded.
type answer struct {
	status     int
	state      string // the server state it means while it lasts (a failing answer)
	action     action
	retryAfter time.Duration
	msg        string // the server's reason, one line
	cause      string // for reject: why, one of the cause constants

	// The lines the answer names (reject only), and what happened to the rest.
	lines       []lineError
	restWritten bool // the lines not named were written (a partial write)
	complete    bool // lines names every refused line of the request
	partial     bool // the server says it wrote part of the request

	// proven: a refusal without a reason (or as too large) that came after
	// something proved the server takes this batch's writes, so it is the
	// lines' fault; one that came before may be the server's (a proxy
	// refusing everything for a while) whatever proved it since.
	proven bool
}

// lineError is one refused line an answer names: by its number in the request
// (3.x, InfluxDB Cloud/IOx), or by its text (1.x, 2.x: record holds
// "<line>': <reason>", cut by matching the request's lines).
type lineError struct {
	n      int    // 1-based line number; 0 when only the text is known
	line   string // the line as the server quotes it ("" when unknown)
	reason string
	record string // 1.x/2.x: the text after "unable to parse '"
}

// maxMsg caps the reason kept from an answer (a 1.8 parse error quotes every
// refused line).
const maxMsg = 1024

var (
	// InfluxDB 3 Cloud (IOx): "error parsing line 2 (1-based): Invalid measurement was provided".
	lineNumbered = regexp.MustCompile(`(?m)\bline (\d{1,9})(?: \(1-based\))?: ([^\n]*)`)
	// 1.8's partial write suffix.
	droppedSuffix = regexp.MustCompile(` dropped=\d+$`)
	// Between 1.x's and 2.x's records of lines that did not parse.
	nextRecord = regexp.MustCompile(`[\n ]unable to parse '`)
)

// rejections name refusals of lines for what they are, not for who sent them
// or where: InfluxDB 1.8 (tsdb, models, coordinator), 2.x (points parser,
// 422 partial writes) and 3.x (write buffer, catalog, IOx), lowercased.
var rejections = []struct{ text, cause string }{
	{"points beyond retention policy", causeRetention},
	{"outside retention", causeRetention},
	{"field type conflict", causeSchema},
	{"type mismatch", causeSchema},
	{"already exists as type", causeSchema},
	{"series key", causeSchema},
	{"multiple instances of", causeSchema},
	{"invalid column type", causeSchema},
	{"reserved column", causeSchema},
	{"max-values-per-tag", causeLimit},
	{"max series per database", causeLimit},
	{"would exceed", causeLimit},
	{"exceeds limit", causeLimit},
	{"too many", causeLimit},
	{"unable to parse", causeSyntax},
	{"failed to parse", causeSyntax},
	{"parse failed", causeSyntax},
	{"parsing failed", causeSyntax},
	{"parsing error", causeSyntax},
	{"bad timestamp", causeSyntax},
	{"invalid field", causeSyntax},
	{"missing field", causeSyntax},
	{"missing tag", causeSyntax},
	{"invalid number", causeSyntax},
	{"invalid boolean", causeSyntax},
	{"unbalanced quotes", causeSyntax},
	{"invalid line protocol", causeSyntax},
	{"invalid measurement", causeSyntax},
	{"no fields", causeSyntax},
	{"not valid utf8", causeSyntax},
	{"partial write", causeOther},
}

// requestFaults are 400s about the request, not its lines: a configuration to
// fix (database or bucket name, precision, authorization header, encoding).
var requestFaults = []string{
	"database is required", "database name", "invalid precision", "authorization header",
	"missing query parameter", "org/bucket", "org and bucket", "bucket is required",
	"content-encoding", "content-type", "mime type", "gzip", "incoming write was empty",
}

// transientRefusals are refusals that name a passing server condition (1.8:
// a shard being dropped under the write).
var transientRefusals = []string{"pending deletion"}

// parseAnswer decodes a failed write's answer: its status, its body (nil when
// none was read) and alt, what the client library made of it (X-Influxdb-Error,
// or code and message) for when the body is missing.
func parseAnswer(status int, body []byte, alt string) answer {
	a := answer{status: status}
	var d decoded
	explained := true
	switch alt = strings.TrimSpace(alt); {
	case len(bytes.TrimSpace(body)) > 0:
		d, explained = decodeBody(body)
	case looksLikeMarkup(alt) || !utf8.ValidString(alt):
		d, explained = decoded{msg: "a body that is not InfluxDB's: " + clip(alt, 120)}, false
	case alt != "":
		d = decodeText(alt)
		d.complete = d.complete && len(alt) < 1024 // X-Influxdb-Error is cut at 1024 bytes
	default:
		explained = false
	}
	a.msg = oneLine(d.msg)
	switch {
	case status == 401:
		a.state, a.action = StateUnauthorized, hold
	case status == 403:
		a.state, a.action = StateForbidden, hold
	case status == 404:
		a.state, a.action = StateNotFound, hold
	case status == 413:
		a.state, a.action, a.cause = StateTooLarge, tooLarge, causeTooLarge
	case status == 429:
		a.state, a.action = StateThrottled, retry
	case status == 408 || status >= 500:
		a.state, a.action = StateServerError, retry
	case status == 400 || status == 422:
		a.state = StateBadAnswer
		a.classifyRefusal(d, explained)
	default:
		a.state, a.action = StateBadAnswer, hold
	}
	if a.msg == "" {
		a.msg = "HTTP " + strconv.Itoa(status) + " without a reason"
	}
	return a
}

// classifyRefusal sorts a 400 or 422: lines refused with a reason (named or
// not), a passing condition, a request-level fault, or no reason at all.
func (a *answer) classifyRefusal(d decoded, explained bool) {
	low := strings.ToLower(d.msg)
	a.partial = strings.Contains(low, "partial write")
	switch {
	case !explained:
		a.action, a.cause = unexplained, causeUnexplained
		return
	case len(d.lines) > 0:
		a.action, a.lines, a.restWritten, a.complete = reject, d.lines, d.restWritten, d.complete
		a.cause, _ = causeOf(low)
		return
	}
	for _, t := range transientRefusals {
		if strings.Contains(low, t) {
			a.state, a.action = StateServerError, retry
			return
		}
	}
	if c, ok := causeOf(low); ok {
		a.action, a.cause = reject, c
		return
	}
	for _, f := range requestFaults {
		if strings.Contains(low, f) {
			a.state, a.action = StateBadRequest, hold
			return
		}
	}
	a.action, a.cause = unexplained, causeUnexplained
}

// causeOf says why a refusal's (lowercased) text refuses lines; false when it
// does not say.
func causeOf(low string) (string, bool) {
	for _, r := range rejections {
		if strings.Contains(low, r.text) {
			return r.cause, true
		}
	}
	return causeOther, false
}

// decoded is what a body says.
type decoded struct {
	msg         string
	lines       []lineError
	restWritten bool
	complete    bool
}

// decodeBody reads a JSON answer of any InfluxDB, or a text one; explained is
// false when it carries no reason (empty, markup, cut-off JSON).
func decodeBody(body []byte) (d decoded, explained bool) {
	body = bytes.TrimSpace(body)
	if body[0] != '{' {
		text := string(body)
		if !utf8.ValidString(text) || looksLikeMarkup(text) {
			return decoded{msg: "a body that is not InfluxDB's: " + clip(text, 120)}, false
		}
		return decodeText(text), true
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return decoded{msg: "an unreadable JSON body (" + err.Error() + "): " + clip(string(body), 120)}, false
	}
	var parts []string
	for _, k := range []string{"code", "message", "error", "err"} {
		if s := jsonString(fields[k]); s != "" {
			parts = append(parts, s)
		}
	}
	d.msg = strings.Join(parts, ": ")
	errText := jsonString(fields["error"])
	low := strings.ToLower(d.msg)
	switch data := bytes.TrimSpace(fields["data"]); {
	case len(data) > 0 && data[0] == '[':
		// 3.x write_lp with accept_partial (the default): the valid lines
		// were written, the refused ones are listed.
		var list []lineJSON
		if json.Unmarshal(data, &list) == nil {
			for _, l := range list {
				if le, ok := l.lineError(); ok {
					d.lines = append(d.lines, le)
				}
			}
			d.restWritten = strings.Contains(strings.ToLower(errText), "partial write")
			d.complete = len(list) < 100 && len(d.lines) == len(list) // 3.x docs: "up to 100"
		}
	case len(data) > 0 && data[0] == '{':
		// 3.x with accept_partial=false (/api/v2/write, /write): nothing was
		// written; the first refused line is named.
		var l lineJSON
		if json.Unmarshal(data, &l) == nil {
			if le, ok := l.lineError(); ok {
				d.lines = append(d.lines, le)
			}
		}
	case strings.Contains(low, "(1-based)") || strings.Contains(low, "errors encountered on line"):
		// InfluxDB 3 Cloud (IOx): atomic, every refused line by number.
		for _, m := range lineNumbered.FindAllStringSubmatch(d.msg, -1) {
			n, err := strconv.Atoi(m[1])
			if err == nil && n > 0 {
				d.lines = append(d.lines, lineError{n: n, reason: m[2]})
			}
		}
	default:
		reason := errText
		if reason == "" {
			reason = jsonString(fields["message"])
		}
		d.lines, d.restWritten, d.complete = quotedLines(reason)
	}
	return d, d.msg != ""
}

// decodeText reads a text reason (a 1.8 X-Influxdb-Error header, a 3.x text
// body).
func decodeText(text string) decoded {
	d := decoded{msg: text}
	d.lines, d.restWritten, d.complete = quotedLines(text)
	return d
}

// lineJSON is one refused line of an InfluxDB 3 answer.
type lineJSON struct {
	OriginalLine string `json:"original_line"`
	LineNumber   int    `json:"line_number"`
	ErrorMessage string `json:"error_message"`
}

func (l lineJSON) lineError() (lineError, bool) {
	if l.LineNumber <= 0 && l.OriginalLine == "" {
		return lineError{}, false
	}
	return lineError{n: max(l.LineNumber, 0), line: l.OriginalLine, reason: l.ErrorMessage}, true
}

// quotedLines finds 1.x's and 2.x's "unable to parse '<line>': <reason>"
// records, one per refused line. 1.8 wrote the other lines when the message
// is a partial write; 2.x and a 1.8 answer without points wrote none. Both
// list every line that did not parse.
func quotedLines(msg string) (lines []lineError, restWritten, complete bool) {
	const lead = "unable to parse '"
	i := strings.Index(msg, lead)
	if i < 0 || strings.Contains(msg[:i], "\n") {
		return nil, false, false
	}
	text := msg[i:] // after a 2.x code or 1.8's "partial write: "
	if strings.Contains(msg[:i], "partial write") {
		text, restWritten = droppedSuffix.ReplaceAllString(text, ""), true
	}
	// Records are joined by newlines (spaces in X-Influxdb-Error).
	for _, rec := range nextRecord.Split(text[len(lead):], -1) {
		if rec != "" {
			lines = append(lines, lineError{record: rec})
		}
	}
	return lines, restWritten, len(lines) > 0
}

func jsonString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

func looksLikeMarkup(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "<") || strings.Contains(strings.ToLower(s), "<html")
}

// oneLine makes a reason fit a log line.
func oneLine(s string) string {
	return clip(strings.Join(strings.Fields(s), " "), maxMsg)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
