package memory

import "github.com/tilesieve/tilesieve/shared/testkit/tilegen"

// sparseTileKeys returns n keys shaped like a real tile set, the same ones
// bench/cachebench's workload uses: the honest input for bookkeeping
// measurements (dense keys share more radix inner nodes per key).
func sparseTileKeys(n int) []string { return tilegen.Keys(n, 0x7115e5e5) }
