// Package report turns recorded offset series into the statistics of package
// stats: the reference study's accuracy (mean), precision (standard
// deviation) and percentile bounds, a drift fit, and ADEV, MDEV, TDEV and MTIE.
// It is the library behind 'monagent report'.
//
// # Inputs
//
// Records come from a spool directory (the segment files of sink/spool, read
// directly and without its lock, so a running agent does not block a report;
// a torn tail of the newest segment is skipped), from a file of InfluxDB line
// protocol, or from InfluxDB 1.8's /query endpoint (InfluxQL,
// SELECT "field" FROM "measurement" WHERE time >= start AND time <= stop
// [AND "tag" = 'value'] GROUP BY *, with epoch=ns and chunked=true, so the
// answer is decoded chunk by chunk). When every input is an InfluxDB, Run
// (without an HTML page or a correlation) first asks for the groups, a
// count of the field GROUP BY the Query.GroupBy tags (none: every tag), and
// then reads, computes and lets go of a batch of groups at a time
// (groups.go): it holds a few series' points, not the fleet's. Only the records of Query.Measurement
// carrying Query.Field are used. Line protocol has no syntax for NaN or
// infinity: such lines, like any malformed line, are skipped and counted
// (Counts.Malformed), the first one named with its line number. Run reads
// several inputs (Input.Paths, any mix) in order into one collection, so two
// boards' spools give one report with both (--group-by host, --match).
//
// # Series
//
// A series is the set of records sharing the values of the Query.GroupBy
// tags; with no GroupBy, every tag (the record's whole tag set), so records of
// different sources are never mixed. When a series holds records whose clock
// domain tags ("clock", "ref") differ, Collect fails naming the series: group
// by that tag too.
//
// Field values are int, uint or float nanoseconds; floats are rounded to the
// nearest int64. NaN and infinite floats are skipped and counted (NonFinite),
// as are string and boolean values (NonNumeric) and records without the field
// (MissingField). Records are sorted by time (stable: of records with equal
// times the one read first stays first), and a series keeps one record a
// time, the one InfluxDB keeps: it stores a point (measurement, tag set,
// time) once, the last written, so of records of one tag set at one time the
// last read is kept and the rest counted (Duplicates); records of other tag
// sets at that time (a series grouping several) are dropped but the one of
// the tag set first in key order, and counted (SameTime). The spool's
// records, in the order written, and InfluxDB's answer for them thus give
// the same series.
//
// # Computing
//
// Summary statistics use every sample. Offsets far from zero (beyond 2^40
// ns, e.g. a clock against MONOTONIC_RAW at ~1.8e18 ns) would lose their
// nanoseconds in float64: every statistic of such a series is computed from
// x - b, b = x[0] its first value (those of |x| from |x| - |b|), and kept
// as b and that relative value (NS), which no output rounds to float64: the
// JSON gives the location statistics as exact integers (rounded to the ns),
// base_ns (also as a string) and, in "relative", their values relative to
// it with fractions; the tables print "b+23.42 ns" and say b in a note.
// Exact while the values lie within 2^53 ns (104 days) of b; beyond, a note
// says they are float64. The tables have a column per bound (Options.Bounds)
// with the share of |x| within it. The drift is a least-squares line over
// every sample (it needs 3). The stability measures need regular sampling:
// the sampling interval tau0 is given (Options.Tau0) or estimated as the
// median interval of the series rounded to 3 significant digits (an agent
// collecting every second shows 1.000336 s); the series is cut at gaps with
// stats.SplitRegular and the longest regular segment is analysed, at octave
// taus; each point carries its terms n, the non-overlapping ones K and,
// but for MTIE, its 68 % interval value·(1 ∓ 1/√K) (Point). What a series
// is too short for is left out with a note, never an error: a single sample
// gives n, mean, max |x| and the percentiles. Text prints τ, drift and the
// deviations one way everywhere (display.go: FormatTau, FormatDrift).
//
// # Cross-board matching
//
// RunMatch pairs event streams of boards fed by one trigger: the records of
// the measurement (gpio_event, pps_event, marker) are grouped by one tag,
// the reference value's events against each other value's, by stats.Match
// (mutual nearest within a window; by default DefaultWindowFraction, 0.4,
// of the reference's median event interval). An event's time is its record
// time (Query.TimeValue) or a field such as global_ns, the HCA global
// timeline, whose bound field (global_bound_ns) gives each pair's bound as
// the sum of its two events' bounds. The offsets, the reference study's eq.
// 3, TS_other − (TS_ref + Δ_ISR), at the reference's event times, are a
// series like any other ("match host=b1 vs host=b2"), with the pairing's
// counts in Result.Match. Events of equal times are dropped but the first,
// and counted. With MatchOptions.Piecewise the global times are not read
// but placed post hoc: each event's hca_local_ns between its host's
// hca_model records by hca.Interpolate (piecewise.go says which models).
//
// # Correlation and the HTML page
//
// Correlate pairs a clock series' frequency offset (stats.WindowFrequency)
// with one sensor series over shared time and fits the coefficient
// (stats.FitLine), ppb per sensor unit; series without shared time, a
// constant sensor or fewer than 3 paired windows are errors. WriteHTML
// writes an index.html with the tables, the notes, the correlation and the
// plots (WritePlotSet: each drawn, or why not), offline.
//
// # Traffic
//
// RunTraffic reports the NTP probe's bytes_per_s (ntp_probe) and the PTP
// probe's bytes_sent_per_s + bytes_received_per_s (ptp_probe_stats): each
// series' latest record, the bytes per second per client, and the clients
// one server or master port serves with TrafficShare of 100 Mb/s and 1 Gb/s,
// next to the reference study's figures.
//
// The package does not log; progress goes to an optional io.Writer.
package report
