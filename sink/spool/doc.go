// Package spool is monagent's durable on-disk queue: an append-only log of
// line-protocol batches in segment files, read in order by a shipper and deleted
// whole once acknowledged.
//
// Producers never wait on the disk or the network: Append encodes into a memory
// buffer; a background flusher seals the buffer into entries (of at most about
// FlushBytes each) and writes them at the latest a flush interval (default
// 100 ms) after the buffer's first point, at once when the producer says it
// has nothing more for now (Idle: the agent's writer, its queue empty; with
// IdleFlush such a producer's first point arms no timer, and an Append
// FlushInterval after the first point flushes when it never rests), and
// fsyncs at most once per fsync interval (default 1 s, to spare flash) or once
// half of MaxBuffer is written but not fsynced; data written at t is fsynced
// by t plus the fsync interval. A kill -9 loses what is not yet
// written: the last flush interval, and on a slow disk what arrived during the
// flush's fsyncs too; a power cut what is not yet fsynced: the last fsync
// interval, plus the flush interval and the time the fsyncs take.
//
// On disk, a directory holds segments named by the sequence number of their first
// point (00000000000000000001.seg) and a file "ack" with the sequence number up to
// which every point is resolved (delivered or dead-lettered). The directory
// is its owner's alone (0700: Open creates it so, and narrows one others may
// read) and so is every file in it (0600). Each entry is
//
//	u32 payload length | u32 CRC32C of the rest | u64 first point seq |
//	u32 points | u8 flags (1 = gzip) | 3 zero bytes | payload
//
// little-endian; within a segment the entries' sequence numbers run on without a
// gap. A segment is created by the first write that needs it: opening and closing
// a spool without appending changes no file. Every reader of the format (Open's
// recovery, the shipper's Reader, ReadDir) reads a segment entry by entry through
// a buffer of max(64 KiB, one entry), whatever the segment's size. On open, a torn
// or corrupt tail is cut at the first bad entry of its segment and everything
// before it replays. A size cap drops whole oldest segments and counts exactly how
// many unsent points went with them. ReadDir reads a spool directory without its
// lock and writes nothing: it runs beside the agent (monagent report, spool stats).
//
// # When the disk fails
//
// A segment that cannot be created (disk or inodes full, no file descriptor
// left, a name taken) or written is tried again at every flush; the sealed
// entries wait in memory meanwhile, and a write that fails ends its segment (a
// partial entry is cut first; if the cut fails the garbage stays behind the last
// whole entry, where readers stop), so later entries never follow garbage. The
// spool recovers by itself once the cause is gone, in whatever order space
// comes back: the waiting entries are written a segment at a time, and a write
// that fails part way keeps the whole entries it wrote, so a backlog larger
// than the free space (or than the whole disk) goes to disk as far as it fits
// and the rest follows as the shipper frees space; it is never retried whole.
// When the segment a failed write ended holds only resolved points (a disk no
// larger than a segment, full of what was shipped), it is deleted and the
// write tried once more at once.
//
// A failed fsync is not retried on the same file: Linux reports a writeback
// error once and may have dropped the pages, so a later fsync proves nothing.
// The data written since the segment's last good fsync is treated as not durable:
// its entries are read back, cut from the segment and written again to a new one
// (taken back). If they do not read back intact, or the cut fails, they stay
// where they are and the segment is ended: the reader hands them out if their
// bytes are still there and counts them in DroppedCorrupt if not.
//
// MaxBuffer bounds, together, the points buffered, being written, sealed but
// not written, and written but not yet fsynced (what a failed fsync takes
// back; with Compress, counted compressed). Beyond it Append
// refuses: the points are counted in DroppedDisk while writing fails, in
// DroppedBuffer when appends merely outran a working disk. Close counts in
// DroppedDisk whatever it could not write. So every point handed to the spool
// is, exactly, acknowledged, dead-lettered, pending on disk, buffered, or in one
// dropped counter (Stats).
//
// # When the disk is slow
//
// An SD card can take hundreds of ms per fsync. Only the flusher waits for
// it: Append takes the producer's lock alone, and the reader,
// acknowledgements and Stats take the disk side's lock, which every fsync
// lets go of while it runs. New points wait in the buffer meanwhile: one
// flusher writes, and fsyncs, in turn. A flush fsyncs the segment, and the
// directory after a segment was created or removed, and with acknowledgements
// to record the ack file and the directory again; a segment that fills up is
// fsynced as it is ended. Nothing is dropped while what arrives during the
// longest of these flushes fits in what MaxBuffer leaves beside the data
// written and not yet fsynced (up to half of MaxBuffer before an early
// fsync). Measured figures, with a 500 ms fsync: BenchmarkSlowFsync, and
// docs/performance.md.
//
// Every counter is an atomic 64-bit type, safe on 32-bit ARM.
package spool
