// Package phc reads PTP hardware clocks (PHCs): discovery through sysfs, the
// PHC of a network interface (asked of sockts, the one home of what a NIC can
// timestamp), which PHCs a list of devices and interfaces names (Select, each
// once; SharedPHCs, the interfaces that share one), capabilities, and the offset between a PHC and a system clock
// sampled with the ioctls of
// Documentation/driver-api/ptp.rst and include/uapi/linux/ptp_clock.h:
// PTP_SYS_OFFSET_PRECISE (cross-timestamp, where the driver has it),
// PTP_SYS_OFFSET_EXTENDED (best of N reads bracketed by system clock reads) and
// PTP_SYS_OFFSET (the oldest, REALTIME only).
//
// Every reading names the system clock it was taken against and the method used.
// facebook/time/phc chooses MONOTONIC_RAW or REALTIME through a package global;
// this package always asks for the clock id the caller wants and, when the kernel
// refuses it, says which clock it fell back to.
//
// External timestamps (OpenExtts): pins set to EXTTS (PTP_PIN_SETFUNC2) and
// channels enabled with PTP_EXTTS_REQUEST2, read as batches of 32-byte
// ptp_extts_events in the PHC's time. The kernel queues them in a 128-slot
// buffer that drops the oldest stamp when full and carries no sequence number,
// so such loss cannot be counted exactly: ExttsStats counts what can be seen
// (full reads, edges missing from a known period, stamps going backwards).
// Closing disables the channels and puts the pins back. ExttsTotals add up
// the counters of a reader reopened after failures; ExttsChannel.EdgeOf says
// which edge a stamp is when the driver does not.
//
// StepDetector judges successive readings against MONOTONIC_RAW: a PHC
// advancing as its last interval's rate predicts, stopped, or stepped (set
// with clock_settime, as ptp4l and phc_ctl do) beyond a bound made of a
// threshold, the slew a servo may make and the read windows. Tracker follows
// a PHC from collection to collection: it reads it against several system
// clocks, judges each reading so, and keeps the translators' models of the
// PHC, restarted after a step. phctest is a scripted machine with a PHC for
// tests.
//
// It never adjusts a clock: no PTP_CLOCK_ADJTIME, no clock_settime.
package phc
