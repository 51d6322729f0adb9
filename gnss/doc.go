// Package gnss is a client of gpsd's JSON protocol (gpsd_json(5), "Core
// Protocol Responses"): it connects over TCP (gpsd's default port 2947),
// asks for the JSON stream and PPS reports with
// ?WATCH={"enable":true,"json":true,"pps":true}; and decodes the
// newline-delimited objects that follow.
//
// Decoded are the classes a time monitor needs: TPV (fix mode, the fix's
// UTC time, ept, position), SKY (satellites seen and used), TOFF and PPS
// (gpsd's pairs of the receiver's time, real_sec/real_nsec, and the system
// clock's stamp of it, clock_sec/clock_nsec: for TOFF the arrival of the
// cycle's first sentence, for PPS the pulse's edge), and VERSION, DEVICES,
// DEVICE, WATCH and ERROR, which are worth a log line and are handed over as
// their raw text. Any other class is ErrUnknownClass and a line that is no
// JSON object with a class is ErrGarbage; both come as a *LineError and the
// connection stays usable.
//
// Times are int64 nanoseconds and never float seconds: real_sec/real_nsec
// and clock_sec/clock_nsec are parsed as integers, TPV's ISO-8601 "time"
// digit by digit, ept as a decimal. Times in TOFF and PPS count since the
// Unix epoch in UTC (gpsd's clock is CLOCK_REALTIME); Conn stamps each line
// with CLOCK_REALTIME when the read that completed it returned.
//
// A Referee holds the rule by which the system clock is judged against a
// receiver: per device, a reference message (PPS, or TOFF) is a sample of
// clock − real, bounded by |offset| + latency and synchronised while the
// latest TPV, at most the staleness old, has a 3D fix; the other class with
// the reference quiet for longer than the staleness is a missed sample.
// Each device is its own reference, and a Referee follows at most a given
// number of devices (Devices, the capped set of names a client keeps
// per-device state for): a gpsd naming ever new devices cannot grow it.
//
// Dial's timeout bounds each read as well as the connect: a gpsd that keeps
// the connection open and sends nothing is an error of Next
// (os.ErrDeadlineExceeded) once it passes.
//
// Decoding a TPV, SKY, TOFF or PPS line allocates nothing once the device
// path has been seen (Decoder keeps it). The package neither logs nor
// reconnects: a caller that wants a long-lived feed (the agent's gnss
// source) dials again when Next fails. It does not parse NMEA, and it is no
// replacement for libgps where AIS, RTCM or subframes are wanted.
package gnss
