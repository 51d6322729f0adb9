// Package ptp measures PTP sync quality: a monitor of ptp4l through its
// management socket (IEEE 1588 clause 15 management messages and linuxptp's
// _NP extensions), and a measurement-only delay-request probe of a master.
//
// The monitor binds its own Unix socket next to ptp4l's, sets the domain number
// (ptp4l ignores other domains), gives every request a deadline and matches
// replies to requests by sequence id; a reply to another request is discarded
// and counted. Management TLVs facebook/time/ptp/protocol decodes are used as
// they are; PORT_DATA_SET is decoded here. A NO_SUCH_ID error (linuxptp 3.1
// has no PORT_SERVICE_STATS_NP) marks that dataset unsupported instead of
// failing the rest.
//
// A Subscriber asks ptp4l to push events (SUBSCRIBE_EVENTS_NP) to a socket of
// its own, renews the subscription and reads the datasets ptp4l sends. A
// SlaveEventListener is the socket ptp4l's slave_event_monitor sends every
// Sync's and Delay_Req's timestamps to; Offsets computes from them what
// ptp4l computes (linuxptp 3.1 tsproc and mmedian).
//
// Nothing here adjusts a clock.
package ptp
