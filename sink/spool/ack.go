package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"time"
)

// Batch is a run of consecutive points handed to a shipper.
type Batch struct {
	FirstSeq, LastSeq uint64
	Points            int
}

// Ack resolves every point up to b.LastSeq: delivered, except deadLettered of
// them that the shipper set aside. Fully resolved segments are deleted. The
// position reaches the ack file, fsynced, within the fsync interval (at once
// after Close): a crash re-sends at most that interval's points, which InfluxDB
// stores once.
func (s *Spool) Ack(b Batch, deadLettered int) error {
	s.io.Lock()
	if s.ioClosed { // Ack writes the ack file itself: it needs the disk
		s.io.Unlock()
		s.disk.Lock()
		defer s.disk.Unlock()
		s.io.Lock()
	}
	defer s.io.Unlock()
	if b.LastSeq <= s.acked {
		if s.ioClosed && s.ackDirty {
			return s.persistAck()
		}
		return nil
	}
	s.acked = b.LastSeq
	s.ackDirty = true
	s.deadLettered.Add(uint64(deadLettered))
	s.acknowledged.Add(uint64(b.Points - deadLettered))
	s.removeResolved()
	for len(s.gone) > 0 && s.gone[0].last <= s.acked {
		s.gone = s.gone[1:]
	}
	if s.ioClosed {
		return s.persistAck()
	}
	s.arm(max(s.opts.FsyncInterval-time.Since(s.ackSync), 0)) // the flusher writes the ack file within the fsync interval
	return nil
}

// removeResolved deletes the oldest segments while every point in them is
// resolved, but not the one being written, and reports whether it deleted
// one.
func (s *Spool) removeResolved() bool {
	removed := false
	for len(s.segs) > 0 && s.segs[0].last <= s.acked {
		if s.active != nil && len(s.segs) == 1 {
			break // the segment being written stays
		}
		os.Remove(s.segs[0].path)
		s.dirDirty = true
		s.segs = s.segs[1:]
		removed = true
	}
	return removed
}

// persistAck replaces the ack file: write a temporary file, fsync it, rename it
// over the old one and fsync the directory. s.disk and s.io are held (io is
// let go during the fsyncs: an acknowledgement meanwhile leaves ackDirty set).
func (s *Spool) persistAck() error {
	s.ackSync = time.Now()
	acked := s.acked
	binary.LittleEndian.PutUint64(s.ackScratch[:], acked)
	binary.LittleEndian.PutUint32(s.ackScratch[8:], crc32.Checksum(s.ackScratch[:8], castagnoli))
	tmp := s.ackPath() + ".tmp"
	err := func() error {
		f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = f.Write(s.ackScratch[:])
		if err == nil {
			err = s.syncFile(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := os.Rename(tmp, s.ackPath()); err != nil {
			return err
		}
		d, err := os.Open(s.opts.Dir)
		if err != nil {
			return err
		}
		err = s.syncFile(d)
		d.Close()
		return err
	}()
	if err != nil {
		s.writeErrors.Add(1)
		return fmt.Errorf("spool ack %s: %w", s.ackPath(), err)
	}
	s.fsyncs.Add(2)
	s.ackDirty = s.acked != acked
	return nil
}

// forgetInFlight counts the in-flight points the cap removed from disk as
// dropped once nobody can acknowledge them any more, and resolves them.
func (s *Spool) forgetInFlight() {
	for _, g := range s.gone {
		s.droppedCap.Add(g.count(s.acked+1, g.inFlightEnd))
		if g.last > s.acked {
			s.acked = g.last
			s.ackDirty = true
		}
	}
	s.gone = nil
}

// readAck reads the acknowledged position from the ack file at path: 0 when
// there is none or it is damaged (everything on disk is then sent again).
func readAck(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("spool %s: %w", path, err)
	}
	if len(b) == 12 && crc32.Checksum(b[:8], castagnoli) == binary.LittleEndian.Uint32(b[8:]) {
		return binary.LittleEndian.Uint64(b), nil
	}
	return 0, nil
}
