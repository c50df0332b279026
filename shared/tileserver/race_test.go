//go:build race

package tileserver_test

// raceEnabled: the race detector makes every S3 request several times
// dearer; tests that make tens of thousands scale down.
const raceEnabled = true
