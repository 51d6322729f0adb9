// Package timeapi is the shared-memory segment through which monagent gives
// applications true time with an error bound: for each published clock
// ("system", the board's true UTC; "global", the HCA timeline) a section holds a
// model that turns one read of CLOCK_MONOTONIC_RAW into an interval
// [earliest, latest] centred on the truth, whose half-width grows with the
// model's age and which is void after a deadline the writer sets.
//
// The layout (docs/timeapi.md, byte by byte) is a 64-byte header and up to 15
// sections of 256 bytes in one 4096-byte file, native endian, every 64-bit field
// 8-aligned. Each section has its own seqlock sequence (odd while written). The
// writer stores the sequence, then every field, then the sequence again with
// sync/atomic (sequentially consistent: on 32-bit ARM a DMB before and after
// each store, LDREXD/STREXD for the 64-bit fields); the reader loads the
// sequence, every field and the sequence again with sync/atomic loads (a DMB
// after each on ARM) and accepts the read only if both sequences are equal and
// even. A reader retries a bounded number of times and then returns
// ErrInconsistent: never a torn or stale value as fresh.
//
// Writer is the agent's side: Create maps the file in place (no unlink), so a
// restarted agent serves readers that kept the file open. Reader is the Go
// application's side; clients/c/monagent_time.h and
// clients/python/monagent_time.py read the same layout.
//
// The 64-bit atomics need ARMv7's LDREXD/STREXD (GOARM=7, or a GOARM=6 build
// on an ARMv7 CPU); on ARMv6 Go emulates them with a lock private to the process
// and a reader in another process could see a torn field.
package timeapi
