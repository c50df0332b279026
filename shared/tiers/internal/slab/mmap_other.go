//go:build !linux

package slab

// mapAnon is one heap allocation where no mapping is used: the arena then
// works as on Linux, but its bytes are the collector's.
func mapAnon(n int) ([]byte, bool, error) { return make([]byte, n), false, nil }

func discard([]byte) {}

func unmap([]byte) {}
