// Package hca synchronises the clocks of monagent agents in the manner of
// Hunold & Carpen-Amarie's hierarchical clock synchronisation (HCA, EuroMPI'15)
// and the baselines it is compared with.
//
// What it produces is, for every node (rank 0..p-1), a timebase.LinearModel of
// that node's CLOCK_MONOTONIC_RAW relative to the root's (rank 0): the offset
// local − root as a linear function of local time. CLOCK_MONOTONIC_RAW is
// nobody's to steer, so between re-synchronisations a line describes it well,
// and application markers and GPIO or sensor events stamped on many nodes can
// be placed on one global timeline (the root's clock) with an error bound: the
// model's Uncertainty, which grows with the time since the fit. The root's
// model is the identity.
//
// The package holds the building blocks (RTT estimation with an outlier cutoff,
// Jones & Koenig fitpoints, least-squares and Theil–Sen line fits, SKaMPI's
// interval offset method, min-RTT offsets) and the algorithms built from them
// behind one Algorithm interface, so that they can be compared on the same
// Network: SKaMPI offset-only, tree offset-only, JK, HCA, HCA2 and HCA3. The
// pairs of a tree round run concurrently where the network allows it
// (paralleler); simNetwork accounts for them as parallel in simulated time. The
// tree algorithms measure all their levels in the same sweeps (one fitpoint
// of every edge per sweep, a round at a time), so that every level's line
// spans the same time and none is extrapolated over the others'. A
// fitpoint is by default the exchange with the shortest round trip at its
// own midpoint (MinRTTSample), or Jones & Koenig's median sample. The
// algorithm notes are in docs/hca.md of the shared documentation.
//
// Experiments (experiment.go) run one algorithm on known clocks and check
// every model against the truth: the max and median |error| and the share
// of errors within the published Bound, at chosen times after the sync;
// `monagent hca sim` prints them.
//
// The algorithms drive a Network, which runs ping-pongs between any two ranks.
// simNetwork is an in-memory Network with simulated time and known virtual clocks, so
// that tests can measure every model's true error; it never sleeps.
//
// Between agents, exchanges travel over authenticated UDP (wire.go, udp.go):
// fixed-layout messages with a session ID, the sender's epoch, the epoch of
// the receiver it knows, ranks, a sequence number and an HMAC-SHA256 over all
// of it, and an Endpoint that answers pings with its CLOCK_MONOTONIC_RAW and
// counts every unauthenticated, replayed, stale, foreign-session or
// malformed datagram it drops. An epoch is a random 64-bit nonce drawn
// (crypto/rand) when an Endpoint starts; requests are numbered from 1 in
// it, so no wall clock is needed to keep numbers fresh across restarts (a
// board without a battery-backed RTC boots with its clock behind). Each
// peer's current epoch, the epochs it left and a replay window over the
// current one keep out replays within a run and across the sender's
// restarts; answers, runs and models must name the receiver's own epoch,
// which keeps out replays across the receiver's restarts (an old model
// cannot be installed). Peers learn a restarted rank's epoch within one
// round: its first ping is answered, the answer names its epoch. Models
// also carry the sync round, which must grow within the driver's epoch.
// wire.go has the rules and their limits.
// A driver makes two other nodes exchange by sending the first a run
// request, which that node carries out and reports; after a round it gives
// each node its model (SendModel). PeerNetwork is the Network the driver's
// harness sees: its own exchanges are pings, others' are runs, and the
// exchanges of disjoint pairs run concurrently (paralleler). A Node is an
// agent's member: its Endpoint and, on rank 0, the driver that runs the
// rounds over it, again and again, reporting each round to its caller;
// the members of a Cluster share its peer list and algorithm, and the
// session derived from them.
//
// The algorithms run the exchange schedule from the driver (rank 0's
// agent): a central schedule over distributed exchanges, not the paper's
// fully distributed protocol, so one node's failure is the driver's to see.
// Nothing here steps, slews
// or otherwise disciplines a clock; callers apply the models to timestamps.
package hca
