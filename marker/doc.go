// Package marker is the format of monagent's application markers and a small
// client that sends them.
//
// A local program marks a moment (a phase starts, a request completes, a
// test step fires) by sending one line of text as one datagram to the
// agent's Unix datagram socket (marker.socket in the agent's configuration,
// by default marker.sock in the agent's runtime directory, e.g.
// /run/monagent/marker.sock). The agent stamps the datagram's arrival and
// ships it as one `marker` record at the marker's own time: the sender's
// stamp moved to CLOCK_REALTIME when the line carries one, else the arrival.
// The socket file's permissions (marker.mode, 0660 by default) decide who
// may send.
//
// # Format
//
// One line, at most 512 bytes; a trailing "\n" (or "\r\n") is ignored.
// Words are separated by spaces or tabs:
//
//		<name> [value=<number>] [mono=<ns>|rt=<ns>] [utc=<ns> utc_bound=<ns>|global=<ns> global_bound=<ns>] [<key>=<value> ...]
//
//	  - name (required, first): 1 to 64 bytes of A-Z a-z 0-9 _ . : / -,
//	    starting with a letter, a digit or _. It is the record's name tag.
//	  - value=<number>: a decimal number (digits, '.', an exponent, signs; no
//	    hex, Inf or NaN), at most 32 bytes, shipped as a float field.
//	  - mono=<ns> or rt=<ns> (at most one): the sender's own stamp of the
//	    moment, in nanoseconds of CLOCK_MONOTONIC or CLOCK_REALTIME, 1 to 19
//	    decimal digits (a non-negative int64). Stamp with CLOCK_MONOTONIC where
//	    you can: the agent moves it to REALTIME through its clock models and
//	    ships the move's uncertainty, and it does not jump when REALTIME is
//	    stepped.
//	  - utc=<ns> utc_bound=<ns> or global=<ns> global_bound=<ns> (both words
//	    of one pair, at most one pair): the true time of the moment as the
//	    sender read it from the agent's time API (package timeapi) at the
//	    event, the interval's midpoint and half-width in section system or
//	    global (Client.SendTrue). Shipped as utc_ns and utc_bound_ns, or
//	    global_ns and global_bound_ns with global_stamp=sender.
//	  - <key>=<value>: a tag, at most 4 per marker. Keys are 1 to 32 bytes of
//	    a-z 0-9 _, starting with a letter, each at most once, and not one of
//	    name, host, value, mono, rt, time, arrival_ns, sender_ns,
//	    sender_clock, uncertainty_ns, nor a word or field of the true stamp
//	    (utc, utc_bound, global, global_bound, utc_ns, utc_bound_ns,
//	    global_ns, global_bound_ns, global_stamp, hca_local_ns). Values are 1 to 64 bytes of
//	    A-Z a-z 0-9 _ . : / + -. Nothing needs escaping, in the line or in
//	    InfluxDB's line protocol.
//
// The words after the name may come in any order. A line that breaks a
// rule is dropped by the agent and counted (self-metric malformed, with the
// last error in malformed_last_error); Parse returns an *Error naming the
// part of the line and the problem.
//
// Cardinality: every distinct name and tag set is an InfluxDB series. The
// limits above bound what one line adds (one record, at most 4 short tags),
// not how many distinct values a sender invents: use tags for a few known
// values (a phase, a rank, a test case), never for ids, counters or times —
// put those in value. The agent counts the series it has seen (self-metric
// series) and drops markers of new series beyond marker.max_series, counted
// in series_dropped, so a runaway sender is seen and bounded.
//
// Examples:
//
//	start
//	phase value=3 mono=123456789012 rank=0 step=warmup
//	request_done value=0.0042 rt=1700000000123456789 route=/api/v1
//
// # Sending one
//
// Shell, with socat (the arrival is the marker's time):
//
//	echo "deploy version=v1.2" | socat - UNIX-SENDTO:/run/monagent/marker.sock
//
// Shell, with the sender's own stamp (date +%s%N is CLOCK_REALTIME in ns;
// the shell has no plain way to read CLOCK_MONOTONIC in ns):
//
//	echo "step rt=$(date +%s%N) n=3" | socat - UNIX-SENDTO:/run/monagent/marker.sock
//
// Python:
//
//	import socket, time
//	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
//	s.sendto(b"phase value=3 mono=%d rank=0" % time.clock_gettime_ns(time.CLOCK_MONOTONIC),
//	         "/run/monagent/marker.sock")
//
// C:
//
//	struct sockaddr_un a = {.sun_family = AF_UNIX, .sun_path = "/run/monagent/marker.sock"};
//	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
//	struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
//	char line[128];
//	int n = snprintf(line, sizeof line, "phase value=%d mono=%lld", 3,
//	                 (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
//	sendto(fd, line, n, MSG_DONTWAIT, (struct sockaddr *)&a, sizeof a);
//
// Go: Dial and Client.Send, which stamps CLOCK_MONOTONIC unless the marker
// has a stamp, and never blocks: when the agent's socket queue is full Send
// fails with ErrFull (the marker is lost, and the application keeps going).
// Senders that must not block should use MSG_DONTWAIT as above.
//
// The package does not log and has no state of its own. It follows no kernel
// document beyond unix(7) (SOCK_DGRAM on AF_UNIX: each send is one whole
// message, or none). It is not a tracing library: markers are for moments a
// person wants to see beside the clock and sensor data, a few per second,
// not for every function call.
package marker
