//go:build race

package disk_test

// raceEnabled: the race detector makes every file operation several times
// dearer; tests that make tens of thousands scale down.
const raceEnabled = true
