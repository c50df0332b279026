//go:build !race

package tileserver_test

const raceEnabled = false
