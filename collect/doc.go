// Package collect is the contract every source of the agent meets and the
// one pattern its event sources share: a Source collects into a Batch at
// its interval; an EventSource runs a reader (a Producer) that blocks on a
// kernel object or socket and puts stamped events into a ring with exact
// counts (EventQueue), and each collection drains the ring into records at
// the events' own times. A source adds only its decoder and its records.
//
// The agent builds sources from its configuration and runs them; nothing
// here knows a configuration, a device or an output.
package collect
