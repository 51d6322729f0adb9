package spool

import (
	"bytes"
	"time"

	"github.com/monagent/monagent/record"
)

// The appends: records and lines into the buffer the flusher (writer.go)
// writes, never waiting for the disk.

// Append encodes records into the spool's buffer. It never waits for the disk:
// when unwritten data has reached MaxBuffer the records are dropped and
// counted (ErrBufferFull). An error also reports records the encoder refused;
// the rest are kept.
func (s *Spool) Append(recs []record.Record) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if len(s.buf)+int(s.unwritten.Load()) >= s.opts.MaxBuffer {
		s.refuse(len(recs))
		s.mu.Unlock()
		return ErrBufferFull
	}
	var rejected int
	var err error
	was := s.bufPoints
	s.buf, rejected, err = s.enc.Append(s.buf, recs)
	s.bufPoints += len(recs) - rejected
	s.appended.Add(uint64(len(recs) - rejected))
	s.rejected.Add(uint64(rejected))
	now, arm := s.flushWhen(was)
	s.mu.Unlock()
	s.signal(now, arm)
	return err
}

// flushWhen says what the points just appended to a buffer that held was
// points ask of the flusher (s.mu held): a flush now when the buffer is
// full or, with IdleFlush, its first point is FlushInterval old; its timer
// when the buffer has just received its first point (not with IdleFlush:
// the producer's Idle flushes it).
func (s *Spool) flushWhen(was int) (now, arm bool) {
	if len(s.buf) >= s.opts.FlushBytes {
		return true, false
	}
	if s.bufPoints == 0 {
		return false, false
	}
	if !s.opts.IdleFlush {
		return false, was == 0
	}
	t := time.Now()
	if was == 0 {
		s.firstAt = t
		return false, false
	}
	return t.Sub(s.firstAt) >= s.opts.FlushInterval, false
}

// signal tells the flusher to flush now, or arms its timer for
// FlushInterval: from here, so that an append wakes no goroutine.
func (s *Spool) signal(now, arm bool) {
	if now {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	} else if arm {
		s.arm(s.opts.FlushInterval)
	}
}

// Idle says the producer has nothing more for now (sink.Idler): what is
// buffered is flushed at once, by the flusher, rather than FlushInterval
// after its first point, so that the flush goes with the instant the
// points came instead of waking the process again (issue 37); its fsync,
// when due, goes with it. Points are then written sooner than
// FlushInterval, never later. An empty buffer wakes nobody.
func (s *Spool) Idle() {
	s.mu.Lock()
	buffered := s.bufPoints > 0
	s.mu.Unlock()
	if buffered {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

// arm makes the flusher wake in d, or sooner if it is due sooner.
func (s *Spool) arm(d time.Duration) {
	s.tmu.Lock()
	defer s.tmu.Unlock()
	if at := time.Now().Add(d); !s.armed || at.Before(s.deadline) {
		s.timer.Reset(d) // Go 1.23 timers: no stale tick after Reset
		s.armed, s.deadline = true, at
	}
}

// refuse counts n points dropped because unwritten data reached MaxBuffer,
// under the reason: writing fails, or appends outran the disk. s.mu is held.
func (s *Spool) refuse(n int) {
	s.appended.Add(uint64(n))
	if s.diskFailing.Load() {
		s.droppedDisk.Add(uint64(n))
	} else {
		s.droppedBuffer.Add(uint64(n))
	}
}

// AppendLines appends lines of line protocol as they are, one point per line
// (a replay of lines set aside earlier). Blank lines and '#' comments are
// skipped; a last line without its newline gets one. It returns how many points
// it appended; like Append it refuses (ErrBufferFull, counted) when unwritten
// data has reached MaxBuffer, so a caller with much to replay flushes in between.
func (s *Spool) AppendLines(b []byte) (int, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return 0, ErrClosed
	}
	full := len(s.buf)+int(s.unwritten.Load()) >= s.opts.MaxBuffer
	var n int
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if len(bytes.TrimSpace(line)) == 0 || line[0] == '#' {
			continue
		}
		n++
		if !full {
			s.buf = append(append(s.buf, line...), '\n')
		}
	}
	if full {
		s.refuse(n)
		s.mu.Unlock()
		return 0, ErrBufferFull
	}
	was := s.bufPoints
	s.bufPoints += n
	s.appended.Add(uint64(n))
	now, arm := s.flushWhen(was)
	s.mu.Unlock()
	s.signal(now, arm)
	return n, nil
}

// Write implements sink.Sink.
func (s *Spool) Write(recs []record.Record) error { return s.Append(recs) }
