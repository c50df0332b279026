//go:build race

package main

// raceEnabled: under the race detector sync.Pool drops a share of what it is
// given back, on purpose, so a count of allocations measures the detector.
const raceEnabled = true
