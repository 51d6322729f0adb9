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
// answer is decoded chunk by chunk). Only the records of Query.Measurement
// carrying Query.Field are used. Line protocol has no syntax for NaN or
// infinity: such lines, like any malformed line, are skipped and counted
// (Counts.Malformed), the first one named with its line number.
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
// times the one read first stays first); of records with exactly the same
// time in one series the first is kept and the rest counted (Duplicates).
//
// # Computing
//
// Summary statistics use every sample. Offsets far from zero (beyond 2^40
// ns, e.g. a clock against MONOTONIC_RAW at ~1.8e18 ns) would lose their
// nanoseconds in float64: the standard deviation, drift, stability and plots
// are computed from x - x[0], and the mean and percentiles get x[0] added
// back. The drift is a least-squares line over
// every sample (it needs 3). The stability measures need regular sampling:
// the sampling interval tau0 is given (Options.Tau0) or estimated as the
// median interval of the series rounded to 3 significant digits (an agent
// collecting every second shows 1.000336 s); the series is cut at gaps with
// stats.SplitRegular and the longest regular segment is analysed, at octave
// taus. What a series is too short for is left out with a note, never an
// error: a single sample gives n, mean, max |x| and the percentiles.
//
// The package does not log; progress goes to an optional io.Writer.
package report
