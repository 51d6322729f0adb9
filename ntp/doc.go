// Package ntp measures NTP sync quality: an SNTP client probe (RFC 5905
// client mode, NTPv4) whose T1 and T4 are kernel or hardware packet timestamps
// (package sockts), and a monitor of chronyd's own state over its command
// protocol. The kernel's clock discipline state (adjtimex) is timebase's.
//
// The probe sends a random 64-bit cookie as its transmit timestamp and accepts
// only replies that echo it as their origin timestamp, so stale, duplicated and
// spoofed replies are rejected. Every rejection has a counted reason. Kiss-o'-Death
// replies are honoured: RATE doubles the poll interval, DENY and RSTR stop
// polling the server for a long back-off. A ServerProbe is the probe of one
// configured server (ParseServer): a name is resolved when it is polled, and
// again after failed polls, so a board may start before its DNS answers.
//
// Offsets are int64 nanoseconds of CLOCK_REALTIME minus server time; nothing in
// this package adjusts a clock.
package ntp
