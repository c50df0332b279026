module github.com/tilesieve/tilesieve/bench

go 1.26.8

require (
	github.com/Yiling-J/theine-go v0.6.3
	github.com/dgraph-io/ristretto/v2 v2.4.2
	github.com/hashicorp/golang-lru/v2 v2.0.7
	github.com/maypok86/otter/v2 v2.4.0
	github.com/tilesieve/tilesieve v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/zeebo/xxh3 v1.0.2 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

replace github.com/tilesieve/tilesieve => ../
