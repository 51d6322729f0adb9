// Package stats computes the statistics monagent reports about a clock
// offset series: accuracy and precision as the reference study defines them
// (accuracy = mean offset, precision = sample standard deviation, and the
// share of samples whose |offset| is within given bounds), percentiles, an
// empirical CDF, a histogram with a fitted normal, a linear drift fit, and
// the time-domain stability measures of NIST SP 1065 (W. J. Riley,
// "Handbook of Frequency Stability Analysis", 2008): overlapping Allan
// deviation, modified Allan deviation, time deviation and MTIE.
//
// All times and offsets are int64 nanoseconds. Results that are not
// integers (means, interpolated percentiles, deviations) are float64 in the
// same unit; ADEV and MDEV are dimensionless.
//
// # Summary statistics
//
// An [Accumulator] takes samples one at a time. Count, mean, sample standard
// deviation (divisor n-1, Welford's update), RMS, minimum, maximum, max |x|
// and the share of |x| <= each bound are always exact and need O(1) memory.
// Percentiles use Hyndman and Fan's type 7 definition (the default of R and
// NumPy): for probability p over n sorted samples x(0..n-1), h = (n-1)p and
// the value is x(floor h) + (h - floor h)(x(floor h + 1) - x(floor h)).
//
// The accumulator keeps the samples themselves up to Config.ExactLimit
// (default [DefaultExactLimit], 131072 samples = 1 MiB: a day of 1 Hz
// samples is exact). Beyond that it folds them into a histogram over int64
// with log-spaced buckets (256 per power of two, exact below 512 ns; 2 x
// 14592 counters = 233 KiB) and stays there. In that mode every order
// statistic is replaced by the midpoint of its bucket, clamped to the exact
// minimum and maximum, so a percentile is off by at most
// max(|x(k)|, |x(k+1)|)/512 (0.2 %) from the type 7 value; Summary.Exact
// and Summary.MaxRelErr say which mode produced a result. Memory is bounded
// by the larger of the two, independent of the number of samples.
//
// # Drift
//
// [FitDrift] fits offset = a + b (t - t0) by ordinary least squares, with t
// strictly increasing; b is reported in ppm (ns per ms) with a two-sided
// 95 % confidence interval from Student's t with n-2 degrees of freedom,
// and the standard deviation of the residuals.
//
// # Frequency and its correlation with a sensor
//
// [WindowFrequency] derives a clock's frequency offset (ppb) from its offset
// series: the least-squares slope over each window, differences taken in
// int64. [FitLine] fits y = a + b x by ordinary least squares with the
// slope's 95 % interval (Student's t, n-2 degrees of freedom) and Pearson's
// r; an x that does not vary (a constant temperature) is [ErrNoSpread],
// never a slope.
//
// # Cross-board event matching
//
// [Match] pairs the events two boards stamped of one trigger (a square wave
// on a GPIO line of each, a PPS) by mutual nearest time within a window, so
// that a missed edge costs one pair rather than shifting the rest, and
// counts the unmatched events of each side. [Matching.Offsets] gives each
// pair's offset as the reference study's eq. 3 defines it, offset =
// TS_B − (TS_A + ΔISR), with ΔISR (the difference of the boards' interrupt
// latencies) given, or estimated by [EstimateDelta] as the median
// difference of a calibration capture stamped by one clock.
//
// # Stability: ADEV, MDEV, TDEV, MTIE
//
// [ADev], [MDev], [TDev] and [MTIE] take phase data x (time error, ns)
// sampled every tau0 ns, and averaging factors m (tau = m tau0). With N phase
// points and d(i) = x(i+2m) - 2x(i+m) + x(i), as SP 1065 defines them
// (its sections on the overlapping and modified Allan variance, the time
// variance and MTIE):
//
//	ADEV^2(tau) = sum_{i=0}^{N-2m-1} d(i)^2 / (2 (N-2m) tau^2)              (overlapping)
//	MDEV^2(tau) = sum_{j=0}^{N-3m} (sum_{i=j}^{j+m-1} d(i))^2 / (2 m^2 tau^2 (N-3m+1))
//	TDEV(tau)   = tau MDEV(tau) / sqrt(3)                                  (ns)
//	MTIE(tau)   = max_{k=0}^{N-m-1} (max x(k..k+m) - min x(k..k+m))          (ns)
//
// A tau needs N >= 2m+1 points for ADEV, N >= 3m for MDEV and TDEV and
// N >= m+1 for MTIE; taus the series is too short for are omitted from the
// result, and if none is left the functions return an error wrapping
// [ErrTooShort]. A nil m list means octaves m = 1, 2, 4, ... up to the
// longest the series allows. Each result carries the number of terms of the
// outer sum. MTIE uses monotone deques, O(N) per tau; ADEV, MDEV and TDEV
// are O(N) per tau and allocate nothing per sample.
//
// These estimators assume regular sampling and do not handle gaps: the
// caller checks a series' timestamps with [CheckRegular], which rejects
// unsorted or duplicate timestamps and gaps with an [*IrregularError]
// naming the first bad index, or cuts it into regular pieces with
// [SplitRegular] and analyses each piece. float64 input is rejected if it
// holds NaN or an infinity. Phase values are converted to float64, exact
// up to 2^53 ns (104 days).
//
// Frequency data y (fractional frequency) converts to phase as SP 1065 does:
// x(0) = 0, x(i+1) = x(i) + y(i) tau0.
//
// The package holds no state, does not log and uses only the standard
// library. It is meant for offline analysis of recorded series
// (monagent report), not for the agent's hot path.
package stats
