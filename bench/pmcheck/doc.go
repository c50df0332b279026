// Package pmcheck cross-checks the project's PMTiles decoder
// (shared/formats/pmtiles) against go-pmtiles, the reference implementation: archives
// written by go-pmtiles' converter and serialisers read back byte-identical,
// archives of the project's test writer and of its writer (shared/formats/pmtiles/
// pmwrite) read by go-pmtiles, tile for tile, Hilbert ids
// equal, and archives of go-pmtiles' serialisers with brotli and zstd
// directories and tiles served byte for byte through the tile server. It
// lives in the bench module so go-pmtiles stays out of the product's go.mod.
package pmcheck
