// Package pmcheck cross-checks the project's PMTiles decoder
// (shared/formats/pmtiles) and its one writer (shared/formats/pmtiles/pmwrite,
// which the test kit pmtilestest writes through) against go-pmtiles, the
// reference implementation: archives written by go-pmtiles' converter and
// serialisers read back byte-identical, archives of the project's writer
// and test kit read by go-pmtiles, tile for tile, Hilbert ids equal, and
// archives of go-pmtiles' serialisers with brotli and zstd directories and
// tiles served byte for byte through the tile server. The archives written
// here with go-pmtiles are the independent reference, which is why they are
// not written with pmwrite: a misreading of the spec shared by the
// project's writer and reader cannot pass them. It lives in the bench module
// so go-pmtiles stays out of the product's go.mod.
package pmcheck
