// Package spool is monagent's durable on-disk queue: an append-only log of
// line-protocol batches in segment files, read in order by a shipper and deleted
// whole once acknowledged.
//
// Producers never wait on the disk or the network: Append encodes into a memory
// buffer; a background flusher seals the buffer into an entry and writes it every
// flush interval (default 100 ms) and fsyncs at most once per fsync interval
// (default 1 s, to spare flash). A kill -9 loses at most the last flush interval;
// a power cut at most the last fsync interval.
//
// On disk, a directory holds segments named by the sequence number of their first
// point (00000000000000000001.seg) and a file "ack" with the sequence number up to
// which every point is resolved (delivered or dead-lettered). Each entry is
//
//	u32 payload length | u32 CRC32C of the rest | u64 first point seq |
//	u32 points | u8 flags (1 = gzip) | 3 zero bytes | payload
//
// little-endian. On open, a torn or corrupt tail is cut at the first bad entry of
// its segment and everything before it replays. A size cap drops whole oldest
// segments and counts exactly how many unsent points went with them.
//
// Every counter is an atomic 64-bit type, safe on 32-bit ARM.
package spool
