//go:build race

package hca

// raceEnabled: the tests run under the race detector, some ten times
// slower; the largest simulations run smaller.
const raceEnabled = true
