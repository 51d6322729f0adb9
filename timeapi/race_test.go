//go:build race

package timeapi

const raceEnabled = true
