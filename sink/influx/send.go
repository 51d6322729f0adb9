package influx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"slices"
	"strings"
	"time"
)

// delivery is the state of delivering one batch.
type delivery struct {
	points   int  // lines in the batch
	accepted bool // the server took a piece of it, or judged one with a reason
	priorOK  bool // the request before the batch was taken
	requests int  // requests sent for it
	budget   int  // requests allowed before a proof while isolating lines refused without a reason
	held     answer

	// suspects are single lines refused without a reason (or as too large)
	// before anything proved the server takes writes; they are dead-lettered
	// once something does, else the batch is held.
	suspects []suspect
}

type suspect struct {
	line []byte
	a    answer
}

// proved says whether the server is shown to take this batch's writes, so
// that a line it refuses without a reason is the line's fault: a piece of the
// batch was taken (or judged with a reason), or, for a batch of one line, the
// request before it was.
func (d *delivery) proved() bool { return d.accepted || (d.points == 1 && d.priorOK) }

// isolationBudget is how many requests a batch of n lines may take, before
// anything proves the server takes writes, to isolate lines refused without
// a reason: twice the 1+2⌈log2 n⌉ that one refused line needs.
func isolationBudget(n int) int { return 4*ceilLog2(n) + 4 }

// ceilLog2 is ⌈log2 n⌉ for n ≥ 1.
func ceilLog2(n int) int { return bits.Len(uint(max(n, 1) - 1)) }

// errHeld says a batch is held: the server refused every part of it tried
// without a reason (400s without one, 413s) and took none, so nothing shows
// the lines are at fault. It waits with the configuration states' backoff.
var errHeld = errors.New("influx: batch held")

// deliver sends the batch until every line is delivered or dead-lettered,
// holding it while the server refuses all of it without a reason. The only
// error is ctx's.
func (s *Shipper) deliver(ctx context.Context) error {
	var backoff time.Duration
	for {
		s.resetDead()
		d := &delivery{points: s.batch.Points, priorOK: s.lastOK, budget: isolationBudget(s.batch.Points)}
		err := s.send(ctx, s.buf, s.batch.Points, d, false)
		if err == nil && len(d.suspects) > 0 {
			err = s.retrySuspects(ctx, d)
		}
		if !errors.Is(err, errHeld) {
			return err
		}
		s.heldBatches.Add(1)
		s.retries.Add(1)
		s.failed(d.held)
		if !s.pause(ctx, &backoff, s.cfg.HoldBackoff) {
			return ctx.Err()
		}
		s.grow()
	}
}

// grow adds the entries behind a held batch, within the batch's limits, so
// that lines the server takes can show it works.
func (s *Shipper) grow() {
	for s.rd != nil && s.batch.Points < s.cfg.BatchPoints && len(s.buf) < s.cfg.BatchBytes {
		e, ok, err := s.rd.TryNext()
		if err != nil {
			// Run re-opens the reader after this batch, from the
			// acknowledged position.
			s.readerErrors.Add(1)
			s.localFailed("spool_read", fmt.Errorf("influx: reading the spool: %w", err))
			s.rd.Close()
			s.rd = nil
			return
		}
		if !ok {
			return
		}
		s.buf = append(s.buf, e.Lines...)
		s.batch.LastSeq = e.LastSeq()
		s.batch.Points += int(e.Points)
	}
}

// retrySuspects sends the lines refused without a reason before anything
// proved the server takes writes once more, together, now that something
// has (a server that refused everything for a while is not the lines'
// fault): what it refuses now is dead-lettered. Without a proof, the batch
// is held.
func (s *Shipper) retrySuspects(ctx context.Context, d *delivery) error {
	if !d.proved() {
		d.held = d.suspects[0].a
		return errHeld
	}
	var lines []byte
	for _, sp := range d.suspects {
		lines = append(lines, sp.line...)
		if lines[len(lines)-1] != '\n' {
			lines = append(lines, '\n')
		}
	}
	n := len(d.suspects)
	d.suspects = nil
	return s.send(ctx, lines, n, d, true)
}

// send writes lines (n of them) and resolves a refusal.
func (s *Shipper) send(ctx context.Context, lines []byte, n int, d *delivery, isolating bool) error {
	a, ok, err := s.attempt(ctx, lines, d, isolating)
	if err != nil || ok {
		return err
	}
	return s.resolve(ctx, lines, n, a, d)
}

// attempt writes lines until the server takes them (true) or judges them:
// refuses lines with a reason, as too large, or without a reason (the
// answer). Server, network and configuration failures are retried here, with
// backoff and Retry-After.
func (s *Shipper) attempt(ctx context.Context, lines []byte, d *delivery, isolating bool) (answer, bool, error) {
	var backoff time.Duration
	for {
		if isolating {
			s.isolateRequests.Add(1)
		}
		d.requests++
		err := s.write(ctx, lines)
		if err == nil {
			d.accepted, s.lastOK = true, true
			s.succeeded(204)
			return answer{}, true, nil
		}
		if ctx.Err() != nil {
			return answer{}, false, ctx.Err()
		}
		a := s.classify(err)
		s.lastErr.Store(s.scrub(a.describe()))
		s.lastOK = a.action == reject
		switch a.action {
		case reject:
			d.accepted = true // the server is there and judged the lines
			s.succeeded(a.status)
			return a, false, nil
		case tooLarge, unexplained:
			s.setStatus(a.status)
			a.proven = d.proved()
			return a, false, nil
		}
		s.failed(a)
		s.retries.Add(1)
		limit := s.cfg.MaxBackoff
		if a.action == hold {
			limit = s.cfg.HoldBackoff
		}
		if a.retryAfter > 0 {
			if !sleep(ctx, min(a.retryAfter, s.cfg.MaxRetryAfter)) {
				return answer{}, false, ctx.Err()
			}
			backoff = limit / 2
			continue
		}
		if !s.pause(ctx, &backoff, limit) {
			return answer{}, false, ctx.Err()
		}
	}
}

// resolve deals with lines (n of them) the server refused with answer a:
// lines it named are dead-lettered and the rest re-sent unless the server
// wrote it; otherwise the lines are halved until each refused one is alone.
// A batch of n lines with k refused ones takes at most 1+2k⌈log2 n⌉ requests
// (⌈log2 n⌉+1 rounds of requests per refused line).
func (s *Shipper) resolve(ctx context.Context, lines []byte, n int, a answer, d *delivery) error {
	if a.partial {
		s.partialWrites.Add(1)
	}
	switch a.action {
	case reject:
		if len(a.lines) > 0 {
			if done, err := s.named(ctx, lines, n, a, d); done {
				return err
			}
		}
		if n == 1 {
			s.rejectLine(lines, a, a.msg, a.cause)
			return nil
		}
	case tooLarge, unexplained:
		if !d.proved() && d.requests > d.budget {
			d.held = a
			return errHeld
		}
		if n == 1 {
			if a.proven {
				s.rejectLine(lines, a, a.msg, a.cause)
			} else {
				d.suspects = append(d.suspects, suspect{lines, a})
			}
			return nil
		}
		if a.action == tooLarge {
			s.splits.Add(1)
		}
	}
	return s.bisect(ctx, lines, n, d)
}

// bisect sends both halves of lines, then resolves each refused one: the
// second half goes before the first is split further, so that a server that
// takes writes shows it early.
func (s *Shipper) bisect(ctx context.Context, lines []byte, n int, d *delivery) error {
	half := n / 2
	cut := 0
	for range half {
		cut += bytes.IndexByte(lines[cut:], '\n') + 1
	}
	first, second := lines[:cut], lines[cut:]
	a1, ok1, err := s.attempt(ctx, first, d, true)
	if err != nil {
		return err
	}
	a2, ok2, err := s.attempt(ctx, second, d, true)
	if err != nil {
		return err
	}
	if !ok1 {
		if err := s.resolve(ctx, first, half, a1, d); err != nil {
			return err
		}
	}
	if !ok2 {
		return s.resolve(ctx, second, n-half, a2, d)
	}
	return nil
}

// named dead-letters the lines the answer names, with the server's reason for
// each, and re-sends the others unless the server wrote them. false: the
// answer does not fit these lines (a line number out of range, a quoted line
// that is not one of them), and they are bisected instead.
func (s *Shipper) named(ctx context.Context, lines []byte, n int, a answer, d *delivery) (bool, error) {
	ls := splitLines(lines, n)
	refused, all := matchNamed(ls, a.lines)
	if len(refused) == 0 {
		return false, nil
	}
	last := 0
	for i, reason := range refused {
		c, ok := causeOf(strings.ToLower(reason))
		if !ok {
			c = a.cause
		}
		s.rejectLine(ls[i], a, reason, c)
		last = max(last, i)
	}
	from := 0 // lines before it were written or refused
	switch {
	case a.restWritten && a.complete && all:
		return true, nil
	case a.restWritten && all:
		from = last + 1 // the answer lists refusals in order, and may stop at 100
	}
	var rest []byte
	left := 0
	for i := from; i < len(ls); i++ {
		if _, gone := refused[i]; !gone {
			rest = append(rest, ls[i]...)
			left++
		}
	}
	if left == 0 {
		return true, nil
	}
	return true, s.send(ctx, rest, left, d, true)
}

// splitLines cuts lines into its n lines, each with its newline.
func splitLines(lines []byte, n int) [][]byte {
	out := make([][]byte, 0, n)
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n') + 1
		if i == 0 {
			i = len(lines)
		}
		out = append(out, lines[:i])
		lines = lines[i:]
	}
	return out
}

// matchNamed finds the lines an answer names, by number or by the text
// 1.x/2.x quote; refused maps their index to the server's reason. all is
// false when some named line is not found. A number whose quoted text is
// another line's measurement is taken as a sign the answer is not about these
// lines: nothing is returned.
func matchNamed(ls [][]byte, named []lineError) (refused map[int]string, all bool) {
	byText := map[string][]int{}
	for i, l := range ls {
		k := string(bytes.TrimSpace(l))
		byText[k] = append(byText[k], i)
	}
	take := func(text string) (int, bool) {
		for _, i := range byText[text] {
			if _, used := refused[i]; !used {
				return i, true
			}
		}
		return 0, false
	}
	refused, all = map[int]string{}, true
	for _, le := range named {
		switch {
		case le.record != "":
			found := false
			for off := 0; ; {
				j := strings.Index(le.record[off:], "': ")
				if j < 0 {
					break
				}
				off += j
				if i, ok := take(strings.TrimSpace(le.record[:off])); ok {
					refused[i], found = le.record[off+3:], true
					break
				}
				off += 3
			}
			all = all && found
		case le.n >= 1 && le.n <= len(ls):
			i := le.n - 1
			if le.line != "" && !sameSeries(le.line, string(ls[i])) {
				j, ok := take(strings.TrimSpace(le.line))
				if !ok {
					return nil, false
				}
				i = j
			}
			refused[i] = le.reason
		case le.line != "":
			i, ok := take(strings.TrimSpace(le.line))
			if ok {
				refused[i] = le.reason
			}
			all = all && ok
		default:
			return nil, false
		}
	}
	return refused, all
}

// sameSeries says whether a line the server quotes (3.x re-formats the lines
// it parsed) is ours: the same text, or the same measurement and tags.
func sameSeries(quoted, ours string) bool {
	quoted, ours = strings.TrimSpace(quoted), strings.TrimSpace(ours)
	return quoted == ours || seriesKey(quoted) == seriesKey(ours)
}

// seriesKey is a line's text up to the first unescaped space.
func seriesKey(line string) string {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			i++
		case ' ':
			return line[:i]
		}
	}
	return line
}

// rejectLine keeps a line the server refused for good, with its reason, for
// flushDead.
func (s *Shipper) rejectLine(line []byte, a answer, reason, cause string) {
	if s.nDead == 0 {
		s.first = a
		s.first.msg = oneLine(reason)
	}
	s.dead = fmt.Appendf(s.dead, "# %s rejected by InfluxDB (HTTP %d, %s): %s\n",
		time.Now().UTC().Format(time.RFC3339Nano), a.status, cause, s.scrub(oneLine(reason)))
	s.dead = append(s.dead, line...)
	if len(line) > 0 && line[len(line)-1] != '\n' {
		s.dead = append(s.dead, '\n')
	}
	s.nDead++
	s.deadBy[slices.Index(causes[:], cause)]++
}

func (s *Shipper) resetDead() {
	s.dead, s.nDead, s.deadBy, s.first = s.dead[:0], 0, [len(causes)]int{}, answer{}
}

// flushDead appends the batch's rejected lines to the dead-letter file with
// one fsync, retrying until it succeeds or ctx ends: the batch is acknowledged
// only once its rejected lines are safe.
func (s *Shipper) flushDead(ctx context.Context) error {
	if s.nDead == 0 {
		return nil
	}
	var backoff time.Duration
	for {
		kept, err := appendSync(s.cfg.DeadLetter, s.dead, s.cfg.DeadLetterMaxBytes)
		if errors.Is(err, errDeadLetterFull) {
			// What fits is kept, the rest counted: the batch goes on (a
			// full file must not hold up the spool behind it).
			lines := deadLines(s.dead[:kept])
			s.deadLettered.Add(uint64(lines))
			s.deadDropped.Add(uint64(s.nDead - lines))
			s.logDeadLetterFull()
			for i, n := range s.deadBy {
				s.rejected[i].Add(uint64(n))
			}
			return nil
		}
		if err == nil {
			break
		}
		s.deadErrors.Add(1)
		s.localFailed("dead_letter", err)
		if !s.pause(ctx, &backoff, s.cfg.MaxBackoff) {
			return ctx.Err()
		}
	}
	s.deadLettered.Add(uint64(s.nDead))
	for i, n := range s.deadBy {
		s.rejected[i].Add(uint64(n))
	}
	s.logDeadLettered()
	return nil
}

// errDeadLetterFull is appendSync's answer when b would take the file beyond
// its cap.
var errDeadLetterFull = errors.New("the dead-letter file is full")

// appendSync appends b (groups of '#' comment lines and the rejected line
// they explain) to path and fsyncs it; on failure it cuts the file back so
// that a retry does not repeat lines. When all of b would take the file
// beyond maxBytes, it appends the whole groups that fit and returns their
// length with errDeadLetterFull. The file is opened per call, so a replay
// can move it aside while the agent runs; it is created 0600 (the lines are
// the agent's records).
func appendSync(path string, b []byte, maxBytes int64) (int, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	var full error
	if room := maxBytes - st.Size(); int64(len(b)) > room {
		full = fmt.Errorf("influx dead-letter %s: %d bytes, %d more would pass its cap of %d: %w", path, st.Size(), len(b), maxBytes, errDeadLetterFull)
		b = b[:fitGroups(b, room)]
		if len(b) == 0 {
			return 0, full
		}
	}
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if err != nil {
		f.Truncate(st.Size())
		return 0, fmt.Errorf("influx dead-letter %s: %w", path, err)
	}
	return len(b), full
}

// fitGroups is the length of the longest prefix of b, at most room bytes,
// that ends after a rejected line (not within its comments).
func fitGroups(b []byte, room int64) int {
	fit := 0
	for pos := 0; pos < len(b); {
		end := len(b)
		if i := bytes.IndexByte(b[pos:], '\n'); i >= 0 {
			end = pos + i + 1
		}
		if int64(end) > room {
			break
		}
		if b[pos] != '#' {
			fit = end
		}
		pos = end
	}
	return fit
}

// deadLines counts the rejected lines (not the comments) in b.
func deadLines(b []byte) int {
	n := 0
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if len(l) > 0 && l[0] != '#' {
			n++
		}
	}
	return n
}
