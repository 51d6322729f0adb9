// Package ring is a lock-free single-producer/single-consumer ring of
// fixed-size records: the hand-off between a goroutine that drains a kernel
// queue (GPIO line events, an IIO buffer) in batches and the one that ships
// them. Neither side ever waits for the other. When the ring is full the
// producer's records are dropped, not the consumer's, and every one is
// counted: loss is never silent.
//
// One goroutine may put and one other may get; more of either need a lock
// around them, and then a channel is simpler. The counters are
// atomic.Uint64, aligned on 32-bit ARM.
package ring
