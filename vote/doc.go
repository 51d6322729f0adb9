// Package vote cross-checks the references of one clock: which of them
// agree, which lie, and the one interval that survives (issue 35). A bound
// is only as good as its reference; a clock with several (the NTP servers
// of the probe, chronyd, ptp4l through the PHC, a GNSS receiver, a PPS)
// lets them vote, so that one that lies is named rather than believed.
//
// # The interval of a reference
//
// The judge's error bound of a sample is |offset| + u, u being what the
// measurement cannot see (judge/bound.go). The vote takes each reference
// as the interval [offset − u, offset + u]: where the clock's true offset
// lies according to that reference alone. Not [offset − bound, offset +
// bound]: that always contains 0 and would let every liar agree (a server
// 5 ms off has offset −5 ms and bound 5.02 ms; its interval is
// [−5.02, −4.98] ms, which a true server's [−0.02, 0.02] ms does not meet).
// In HOLDOVER u is the grown one: judge.View's bound is already grown to
// the view's time (FromView), or Ref.GrowPPB grows it from the sample to
// the vote's now.
//
// # The rule
//
// Only references in LOCKED or HOLDOVER vote (a fresh sample, or a
// reference lost so recently that its grown bound still holds), and those
// FREERUN only for their offset (Ref.Outlier: a fresh, synchronised sample
// whose own uncertainty is within the threshold, so a narrow interval: a
// PPS on the wrong second, a server answering the year 2036, or a clock
// that is truly off, which every reference then says). UNKNOWN, other
// FREERUN references and, with Config.StaleNS, a sample older than that,
// do not vote but are listed (Absent). Of the N that vote, the vote finds the point
// covered by the most intervals (Marzullo's algorithm, as chrony's
// SRC_SelectSource and ntpd's clock select do; RFC 5905 §11.2.1): a sweep
// over the 2N sorted ends, low ends first where ends are equal, so that
// intervals that touch share their point. The references covering it are
// the truechimers when they are more than N/2 and no other region, apart
// from theirs, is covered by as many; the others are falsetickers. The
// combined interval is the intersection of the truechimers' intervals
// (exactly the region of greatest depth).
//
// Edge cases, and why:
//   - No majority (two that disagree; three all apart, 1-1-1; any tie
//     between disjoint regions, such as one wide interval meeting two
//     narrow ones that do not meet): the clock is Disputed. There is no
//     telling which side is right, so none is trusted and no combined
//     interval is given. chrony likewise marks every source a falseticker
//     when no more than half agree ("Can't synchronise: no majority"); a
//     tie is disputed here rather than resolved by picking the lower
//     region, which a liar could exploit.
//   - One reference votes: Single, "not cross-checked". Its interval is
//     given as the answer (it is the judge's own), but it is never said
//     to agree: there is nothing to agree with (Verdict Unchecked).
//   - None votes (all stale): None, no answer, every reference listed.
//   - Bad input: a bound of math.MaxInt64 (+Inf), a bound below |offset|,
//     an offset of math.MinInt64. Such a reference votes (it counts in N)
//     but is in no set: a falseticker's vote, named at once (it is not
//     noise). Ends are computed in saturating arithmetic (±math.MaxInt64,
//     never a wrap): an absurd offset (a server answering the year 2036,
//     ~2^62 ns) is an interval far from the others, voted out by any
//     majority, and disputes a clock with only one other reference.
//
// # The combined answer
//
// For the intersection [lo, hi]: offset = its midpoint (rounded toward 0),
// error bound = max(|lo|, |hi|) = |midpoint| + half-width. It is never
// larger than the best truechimer's bound: every truechimer's interval
// [o − u, o + u] contains [lo, hi], so max(|lo|, |hi|) ≤ max(|o − u|,
// |o + u|) = |o| + u, its bound. And it covers the true offset whenever
// the truechimers' bounds do (an intersection of intervals that each
// contain a point contains it), i.e. whenever the majority is right.
// Not otherwise: a liar whose interval meets the truthful ones' without
// holding the truth (a server slewing from +5 ms back to the truth passes
// through such offsets) is a truechimer no vote can tell from the others,
// and the intersection, narrowed by it, may miss the truth until its lie
// is out of everyone's interval or gone.
//
// # Fast and quiet: the dwell
//
// The combined interval is each vote's own: a liar is out of it from its
// first lying sample. Naming is debounced per reference, counted at the
// reference's own new samples only (Ref.SampleNS changes), so a reference
// sampled slowly is not judged by votes its sample did not take part in:
//   - a reference is named (Falseticker, or Contested while the clock is
//     disputed) after FlagAfter (default 2) consecutive own samples outside
//     the majority (or in a disputed vote);
//   - it is trusted again after ClearAfter (default 3) consecutive own
//     samples in the majority;
//   - votes with one voter or none change no count.
//
// Why 2 and 3: a liar must be named within 3 of its samples; 2 leaves one
// sample of slack for the sample that straddles the change (a server
// whose time is stepped mid-exchange, a daemon's filter mixing old and
// new). A true reference is named only if its own bound fails at 2
// samples in a row: a bound that holds (as the judge's are built to) is
// never named, and one failing independently with probability p per
// sample is named at a rate below p² per sample (the tests run p = 10⁻⁴
// over 10⁶ samples per reference with no false name, and show that
// FlagAfter 1 would name them). Trust comes back more slowly than it goes
// (3 > 2): a reference that lies on and off is not cleared by one lucky
// sample, and its name does not flap. A new reference starts trusted
// and is named like any other; bad input skips the dwell.
//
// Each verdict change is reported (Outcome.Changed) with the time of the
// sample that changed it, for a record dated by its cause.
//
// # Cost
//
// A Voter keeps its buffers: after the first vote sized to the
// references, a vote allocates nothing (pinned by a test with
// testing.AllocsPerRun); it sorts 2N ends, O(N log N). No I/O, no
// logging, no globals; not safe for concurrent use (one Voter per clock,
// under the caller's lock).
//
// A reference votes while its judge holds it LOCKED or HOLDOVER, i.e.
// with a bound within the clock's threshold, or as an outlier whose own
// uncertainty is within it: the judge ends a HOLDOVER
// whose grown bound passes it. That matters, because an interval wide
// enough to know nothing meets every other and lends its vote to a liar
// (two references, one lying and one with a huge interval, would agree);
// a caller growing bounds here with GrowPPB must likewise stop passing a
// reference as HOLDOVER once its grown bound is over the threshold.
//
// Who should not use it: a clock with a single reference gains nothing
// (Single); references of different clocks must never be voted together.
package vote
